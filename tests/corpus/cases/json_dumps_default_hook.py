import json
from dataclasses import dataclass

@dataclass
class Reading:
    city: str
    temp: float

w = await get_weather("Oslo")
r = Reading(w["city"], w["temp"])
json.dumps({"reading": r}, default=lambda o: {"city": o.city, "temp": o.temp})
