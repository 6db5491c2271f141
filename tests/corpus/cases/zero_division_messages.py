# Divisions by zero the script catches and reports.
w = await get_weather("Oslo")
notes = []
try:
    per_hour = w["temp"] / 0.0
except ZeroDivisionError as e:
    notes.append(f"cannot compute rate: {e}")
try:
    bucket = w["humidity"] % 0
except ZeroDivisionError as e:
    notes.append(f"cannot bucket: {e}")
notes
