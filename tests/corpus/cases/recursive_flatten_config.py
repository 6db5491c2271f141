# Flatten nested tool results into dotted keys with a recursive helper.
def flatten(obj, prefix=""):
    out = {}
    for key, value in obj.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            out.update(flatten(value, path))
        else:
            out[path] = value
    return out

flat = {}
for section in ["server", "limits"]:
    flat.update(flatten(await get_config(section), section))
flat
