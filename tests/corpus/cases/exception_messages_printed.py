# Scripts often print the exception they caught: str() and repr() of builtin errors.
w = await get_weather("Paris")
msgs = []
try:
    w["temperature"]
except KeyError as e:
    msgs.append(f"KeyError: {e}")
try:
    w["humidity"] / 0
except ZeroDivisionError as e:
    msgs.append(f"ZeroDivisionError: {e}")
try:
    int(w["conditions"])
except ValueError as e:
    msgs.append(f"ValueError: {e}")
try:
    [][3]
except IndexError as e:
    msgs.append(f"IndexError: {e}")
try:
    w["city"] + w["humidity"]
except TypeError as e:
    msgs.append(f"TypeError: {e}")
try:
    w.temp
except AttributeError as e:
    msgs.append(f"AttributeError: {e}")
try:
    await get_weather("Atlantis")
except RuntimeError as e:
    msgs.append(repr(e))
for m in msgs:
    print(m)
len(msgs)
