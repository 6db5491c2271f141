import json

f = await read_file(path="/config/app.json")
cfg = json.loads(f["content"])
cfg["retries"] += 2
cfg["updated_by"] = "chain"
print(json.dumps(cfg, indent=2))
{"keys": list(cfg), "retries": cfg["retries"], "size": f["size"]}
