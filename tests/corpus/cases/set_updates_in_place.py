# `s |= t`, `s &= t`, `s -= t` and `s ^= t` update the set itself: a
# function that grows a set it was given, and every alias of it, see the
# update. monty rebound the name to a new set, so the caller's set stayed
# empty. `s |= d.keys()` rebinds in CPython too.
def collect(acc, items):
    acc |= set(items)


seen = set()
collect(seen, [3, 1, 3])
alias = seen
seen -= {3}
seen ^= {5, 1}
seen &= {5, 7}
groups = {"a": set()}
bucket = groups["a"]
bucket |= {2}
keys = {1}
keys_alias = keys
keys |= {"x": 0}.keys()
[sorted(alias), alias is seen, sorted(groups["a"]), sorted(keys_alias), len(keys)]
