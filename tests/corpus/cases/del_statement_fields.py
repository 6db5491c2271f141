# Dropping fields with `del` before returning a tool result.
user = await get_user(2)
del user["email"]
del user["joined"]
user["team"] = user["team"].upper()
user
