users = await list_users(team="design")
assert len(users["users"]) >= 3, f"expected at least 3 designers, got {len(users['users'])}"
users
