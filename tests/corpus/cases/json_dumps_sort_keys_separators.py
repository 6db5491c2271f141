import json

rates = await get_exchange_rates(base="EUR")
compact = json.dumps(rates, separators=(",", ":"))
sorted_view = json.dumps(rates["rates"], sort_keys=True, indent=1)
print(compact)
print(sorted_view)
{"as_sent": list(rates["rates"]), "compact_len": len(compact)}
