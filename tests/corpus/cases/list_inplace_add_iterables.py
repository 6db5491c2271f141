# `xs += iterable` is list.extend: a tuple, a string, dict keys and a range
# all extend in place (the alias sees it); a non-iterable is a TypeError.
# Also the default repr of a script's class names `__main__`.
class Plain:
    pass

rows = ["head"]
alias = rows
rows += ("a", "b")
rows += "xy"
rows += {"k1": 1, "k2": 2}.keys()
rows += range(2)
errors = []
for bad in [5, None]:
    try:
        rows += bad
    except TypeError as e:
        errors.append(str(e))
{"rows": rows, "same_list": alias is rows, "errors": errors, "repr": repr(Plain()).split(" at ")[0], "cls": repr(Plain)}
