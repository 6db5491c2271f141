# Iterating a tool result in its own key order, nested objects too.
cfg = await get_config("server")
flat = []
for key, value in cfg.items():
    if isinstance(value, dict):
        for sub, v in value.items():
            flat.append(f"{key}.{sub}={v}")
    else:
        flat.append(f"{key}={value}")
feat = await get_config("features")
enabled = [name for name, on in feat.items() if on]
{"flat": flat, "enabled": enabled, "first_key": next(iter(cfg))}
