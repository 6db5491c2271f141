# A set used only for membership keeps the script on monty, and its answer
# is CPython's: the order comes from the list, not the set.
seen = set()
order = []
for page in (1, 2, 3):
    r = await list_users(page=page)
    for u in r["users"]:
        team = (await get_user(user_id=u["id"]))["team"]
        if team not in seen:
            seen.add(team)
            order.append(team)
{"teams_in_order": order, "n": len(seen), "has_design": "design" in seen}
