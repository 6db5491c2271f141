import json

payload = {"b": [1, 2.5, {"z": None, "a": True}], "a": "ü", "nested": {"y": [], "x": {}}, "n": -7}
back = await echo(value=payload)
same = back["value"] == payload
print(json.dumps(back["value"]))
print(same, list(back["value"]), list(back["value"]["b"][2]))
back
