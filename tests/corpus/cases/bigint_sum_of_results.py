import asyncio

results = await asyncio.gather(*[big_number(e) for e in (62, 63, 64, 65)])
total = sum(r["n"] for r in results)
neg = sum(r["negative"] for r in results)
{"total": total, "neg": neg, "fits_64_bits": total < 2**63, "hex": hex(total)}
