import asyncio

ids = [4, 1, 7, 2]
users = await asyncio.gather(*(get_user(i) for i in ids))
by_id = {u["id"]: u["name"] for u in users}
print(by_id)
teams = {}
for u in users:
    teams.setdefault(u["team"], []).append(u["name"].split()[0])
{"names": by_id, "teams": teams, "inactive": [u["name"] for u in users if not u["active"]]}
