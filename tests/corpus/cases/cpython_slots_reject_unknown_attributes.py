# A record class with `__slots__` catches a typo in a field name: CPython
# refuses the unknown attribute, monty takes it silently, so `auto` runs
# this on CPython.
class Reading:
    __slots__ = ("city", "temp")

    def __init__(self, city, temp):
        self.city = city
        self.temp = temp

readings = []
for city in ["Paris", "Oslo"]:
    w = await get_weather(city)
    r = Reading(w["city"], w["temp"])
    try:
        r.tmep = w["temp"] + 1  # a typo
        status = "typo stored"
    except AttributeError as e:
        status = type(e).__name__
    readings.append({"city": r.city, "temp": r.temp, "typo": status})
readings
