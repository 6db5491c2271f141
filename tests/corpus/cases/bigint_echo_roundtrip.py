import json

# Big integers as arguments and back, and through json.dumps.
values = [2**64, 2**64 - 1, -(2**63) - 1, 10**30, 2**100]
back = await echo(value=values)
print(back["value"] == values)
print(json.dumps({"n": 2**80}))
print(json.loads("123456789012345678901234567890") + 1)
back["value"]
