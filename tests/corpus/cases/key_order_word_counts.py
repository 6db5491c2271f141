# Word counts arrive in first-seen order; the top 3 keep ties in that order.
text = "the quick brown fox jumps over the lazy dog. The dog sleeps, the fox runs!"
r = await count_words(text)
counts = r["counts"]
top = sorted(counts.items(), key=lambda kv: kv[1], reverse=True)[:3]
print(list(counts)[:5])
{"top": top, "total": r["total"], "unique": r["unique"], "first_word": list(counts)[0]}
