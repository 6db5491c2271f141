from contextlib import contextmanager

# A context manager that records what it opened and always closes it.
log = []

@contextmanager
def session(name):
    log.append(f"open {name}")
    try:
        yield name
    finally:
        log.append(f"close {name}")

with session("weather") as s:
    w = await get_weather("Lima")
    log.append(f"{s}: {w['conditions']}")
try:
    with session("forecast"):
        f = await get_forecast("Atlantis")
except RuntimeError as e:
    log.append(f"failed: {e}")
total = sum(d["rain_mm"] for d in (await get_forecast("Lima", days=2))["days"])
{"log": log, "rain_mm": total}
