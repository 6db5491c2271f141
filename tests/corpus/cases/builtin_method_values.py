# Builtin methods as values and methods monty's types lack: CPython runs them.
counts = {}
for day in ["mon", "tue", "wed"]:
    m = await get_metrics(service="search", day=day)
    counts[day] = m["errors"]
worst = max(counts, key=counts.get)
total = sum(counts.values())
bits = total.bit_length()
label = "Errors: {w}".format_map({"w": worst}).translate(str.maketrans("E", "e"))
ratio = (total / 4).is_integer()
{"worst": worst, "bits": bits, "label": label, "ratio_is_whole": ratio, "upper": list(map(str.upper, counts))}
