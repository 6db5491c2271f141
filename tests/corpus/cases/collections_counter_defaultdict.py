from collections import Counter, defaultdict

res = await run_query("SELECT ts, kind, user_id FROM events")
kinds = Counter(r["kind"] for r in res["rows"])
per_user = defaultdict(list)
for r in res["rows"]:
    per_user[r["user_id"]].append(r["kind"])
print(kinds.most_common(2))
{"kinds": dict(kinds), "per_user": dict(per_user), "busiest": max(per_user, key=lambda u: len(per_user[u]))}
