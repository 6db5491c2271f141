# Functional style: map/filter/lambda over tool results.
rates = await get_exchange_rates("USD")
strong = list(filter(lambda kv: kv[1] < 1, rates["rates"].items()))
inverted = dict(map(lambda kv: (kv[0], round(1 / kv[1], 4)), rates["rates"].items()))
names = sorted(map(lambda code: code.lower(), rates["rates"]))
{"strong": strong, "inverted": inverted, "lower": names, "any_above_100": any(v > 100 for v in rates["rates"].values())}
