# A lookup for a user that does not exist; the tool error is not caught.
first = await get_user(2)
print("first:", first["name"])
missing = await get_user(user_id=999)
{"users": [first["name"], missing["name"]]}
