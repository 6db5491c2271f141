# Exceptions built with several or non-string arguments, as a validation
# helper and a rate table keyed by (region, tier) use them: `args` keeps the
# objects, `str()` is the lone argument's str (a KeyError's repr) or the
# tuple's repr, and a missing tuple key stays a tuple.
rates = {("eu", "gold"): 0.9, ("us", "gold"): 0.8, ("eu", "basic"): 1.0}
orders = [("eu", "gold", 120), ("us", "basic", 80), ("apac", "gold", 40), ("eu", "basic", -5)]

def validate(region, tier, amount):
    if amount < 0:
        raise ValueError("negative amount", amount)
    if region not in {"eu", "us"}:
        raise LookupError(region, tier)
    return rates[(region, tier)] * amount

report, failures = [], []
for region, tier, amount in orders:
    try:
        report.append(round(validate(region, tier, amount), 2))
    except KeyError as e:
        failures.append({"kind": "KeyError", "args": list(e.args), "str": str(e), "repr": repr(e), "key_is_tuple": isinstance(e.args[0], tuple)})
    except (ValueError, LookupError) as e:
        failures.append({"kind": type(e).__name__, "args": list(e.args), "str": str(e), "repr": repr(e)})

samples = [ValueError(5), KeyError("k", 2), KeyError(("x", 2)), RuntimeError("a", "b"), TypeError(None), IndexError(), ValueError("plain")]
described = [(type(e).__name__, e.args, str(e), repr(e)) for e in samples]
caught = []
for e in samples:
    try:
        raise e
    except Exception as got:
        caught.append(got is e and got.args == e.args)
try:
    {}[7]
except KeyError as e:
    missing = [e.args, str(e)]
print(failures[0]["repr"], described[1][2])
{"report": report, "failures": failures, "described": [list(d) for d in described], "caught": caught, "missing": missing}
