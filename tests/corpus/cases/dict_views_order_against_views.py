# Keys and items views order against each other as sets do (`k1 <= k2`;
# monty raised "'<=' not supported between instances of 'dict_keys' and
# 'dict_keys'"), items with unhashable values included, and still refuse a
# non-set operand.
before = {"a": 1, "b": [2]}
after = {"a": 1, "b": [2], "c": 3}
k1, k2 = before.keys(), after.keys()
out = [k1 <= k2, k1 < k2, k2 > k1, k2 >= k2, k1 < k1, k1 <= {"a": 0}.keys()]
out += [before.items() <= after.items(), after.items() > before.items(), {"a": 2}.items() < after.items(), k1 <= after.items()]
out += [k1 <= {"a", "b"}, {"a"} < k1, k2 > set()]
try:
    k1 < 5
except TypeError as e:
    out.append(str(e))
out
