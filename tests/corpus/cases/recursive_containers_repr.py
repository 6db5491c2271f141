# A structure that contains itself prints its self-reference as `[...]` or
# `{...}` at the first repeat, in print, str, f-strings and repr alike.
node = {"name": "root", "children": []}
node["children"].append(node)
path = [1, 2]
path.append(path)
print(node)
print(path, f"{path}", str((path,)))
[repr(path), str(node)]
