from dataclasses import dataclass, field

@dataclass
class CityReport:
    city: str
    temp: float
    alerts: list = field(default_factory=list)
    source: str = "get_weather"

reports = []
for city in ["Oslo", "Cairo", "São Paulo"]:
    w = await get_weather(city)
    r = CityReport(city=w["city"], temp=w["temp"])
    if w["temp"] > 30:
        r.alerts.append("heat")
    if w["conditions"] in ("rain", "storm"):
        r.alerts.append(w["conditions"])
    reports.append(r)

print(reports[1])
print(reports[0] == CityReport("Oslo", 7.8, ["rain"]))
[{"city": r.city, "alerts": r.alerts, "source": r.source} for r in reports]
