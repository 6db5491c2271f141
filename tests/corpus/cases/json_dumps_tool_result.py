import json

w = await get_weather(city="Nairobi")
text = json.dumps(w)
print(text)
pretty = json.dumps({"weather": w, "ok": True}, indent=2)
print(pretty)
len(text)
