# List, dict and set comprehensions over tool results.
users = [await get_user(i) for i in range(1, 9)]
active_names = [u["name"] for u in users if u["active"]]
by_team = {t: [u["id"] for u in users if u["team"] == t] for t in ["research", "platform", "design"]}
teams = {u["team"] for u in users}
initials = "".join(u["name"][0] for u in users)
{"active": active_names, "by_team": by_team, "team_count": len(teams), "initials": initials}
