# The tool answers {"zeta": 1, "alpha": 2, "mid": {...}}; keep that order everywhere.
cfg = await get_config("server")
keys = list(cfg)
first = next(iter(cfg.items()))
print(keys, first)
merged = {**cfg, "extra": True}
{"keys": keys, "merged": merged, "mid_keys": list(cfg["mid"])}
