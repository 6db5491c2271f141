# Unique teams, returned sorted (a set's own order is not portable).
teams = set()
for i in range(1, 9):
    teams.add((await get_user(i))["team"])
sorted(teams)
