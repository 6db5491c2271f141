# The last statement is an assignment: the chain's value is None.
user = await get_user(5)
print(user["name"])
result = {"name": user["name"]}
