# Bounded pagination with a for loop and positional arguments.
all_hits = []
for page in range(1, 10):
    resp = await search_docs("auth", page, 3)
    if not resp["results"]:
        break
    all_hits.extend(resp["results"])
    if resp["next_page"] is None:
        break

scores = [h["score"] for h in all_hits]
print("ids:", ", ".join(h["id"] for h in all_hits))
{"total": len(all_hits), "best": max(scores), "worst": min(scores), "mean_words": sum(h["words"] for h in all_hits) / len(all_hits)}
