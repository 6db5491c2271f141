import asyncio

phrases = ["hello", "thank you", "goodbye"]
langs = ["fr", "es", "de"]
pairs = [(p, l) for p in phrases for l in langs]
results = await asyncio.gather(*[translate(text=p, target_lang=l) for p, l in pairs])
table = {}
for (p, l), r in zip(pairs, results):
    table.setdefault(p, {})[l] = r["text"]
for p, row in table.items():
    print(f"{p:>10}: " + " / ".join(f"{l}={t}" for l, t in row.items()))
table
