# Draining a dict with popitem(), and the KeyError message at the end.
cfg = await get_config(section="limits")
pending = dict(cfg) if isinstance(cfg, dict) else {"a": 1}
drained = []
while True:
    try:
        drained.append(pending.popitem())
    except KeyError as e:
        drained.append(str(e))
        break
drained
