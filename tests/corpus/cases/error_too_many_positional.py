user = await get_user(1, "full")
user
