# Raise the recursion limit before walking a nested tool result, as agents
# do for deep trees. monty has `sys.setrecursionlimit` only in its own test
# build (AttributeError in chainbox's), so `auto` runs this on CPython.
import sys

sys.setrecursionlimit(5000)

tree = {"name": "root", "children": []}
node = tree
for depth in range(1, 40):
    child = {"name": f"n{depth}", "children": []}
    node["children"].append(child)
    node = child
echoed = (await echo(tree))["value"]

def depth_of(node):
    deepest = 0
    for child in node["children"]:
        deepest = max(deepest, depth_of(child))
    return 1 + deepest

def names(node):
    return [node["name"]] + [n for c in node["children"] for n in names(c)]

{"depth": depth_of(echoed), "last": names(echoed)[-3:]}
