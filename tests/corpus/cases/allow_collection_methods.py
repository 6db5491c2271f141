# Building an index of users with list, dict, set and tuple methods.
page = await list_users(page=1)
users = [u["name"] for u in page["users"]]
names = list(users)
names.insert(0, "zed")
names.append("amy")
last = names.pop()
first = names.pop(0)
names.reverse()
copy = names.copy()
copy.clear()
names.remove(names[-1])
by_name = dict.fromkeys(users, 0)
by_name.update({"amy": 3})
by_name.setdefault("bob", 1)
removed = by_name.pop("amy")
key, value = by_name.popitem()
more = by_name.copy()
more.clear()
seen = set(users)
seen.add("zed")
seen.discard("nobody")
tags = {"a", "b", "c"}
other = frozenset({"b", "c", "d"})
out = {
    "names": names,
    "popped": [last, first, removed, key, value],
    "counts": [names.count(n) for n in names],
    "where": users.index(users[-1]),
    "by_name": by_name,
    "copies": [copy, more],
    "seen": sorted(seen),
    "sets": [sorted(tags | other), sorted(tags & other), sorted(tags - other), sorted(tags ^ other)],
    "methods": [sorted(tags.symmetric_difference(other)), tags.issubset(other), tags.issuperset({"a"}), tags.isdisjoint({"z"})],
    "tuple": [(1, 2, 2).count(2), (1, 2, 3).index(3)],
    "items": sorted(by_name.items()),
    "keys": list(by_name.keys()),
    "values": list(by_name.values()),
    "get": [by_name.get("zz"), by_name.get("zz", -1)],
}
out
