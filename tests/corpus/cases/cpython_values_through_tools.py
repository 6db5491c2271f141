import statistics

# Values a CPython chain sends to a tool and gets back: non-ASCII text,
# floats, big and negative ints, tuples, None and booleans, nested key order.
# (`statistics` puts the chain on CPython.)
payload = {
    "zeta": "naïve café — 日本語 ✓",
    "alpha": [1.5, 0.1, -2.0, 1e-07, 12345678.9],
    "mid": {"b": 2**70, "a": -(2**65), "c": (1, 2, 3)},
    "flags": [True, False, None],
    "mean": statistics.mean([1, 2, 4]),
}
back = await echo(value=payload)
print(list(back["value"]), list(back["value"]["mid"]))
print(back["value"]["zeta"], back["value"]["alpha"])
back["value"]
