# A leaderboard dict built from sorted items: its order is the ranking.
res = await run_query("SELECT name, salary FROM employees")
pay = {r["name"]: r["salary"] for r in res["rows"]}
ranking = dict(sorted(pay.items(), key=lambda kv: kv[1], reverse=True))
numbered = [f"{i}. {name}" for i, name in enumerate(ranking, start=1)]
print("\n".join(numbered))
ranking
