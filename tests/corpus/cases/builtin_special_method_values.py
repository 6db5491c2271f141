# Special methods of builtin values read as attributes: a common key function
# (`d.__getitem__`) and explicit dunder calls. monty's builtin values have
# none of them as attributes; under auto the script runs on CPython.
scores = {"ann": 7, "bob": 9, "cy": 3}
best = max(scores, key=scores.__getitem__)
ranked = sorted(scores, key=scores.get, reverse=True)
parts = ["ab".__mul__(2), (3).__add__(4), [1, 2, 3].__len__(), "xyz".__contains__("y")]
{"best": best, "ranked": ranked, "parts": parts}
