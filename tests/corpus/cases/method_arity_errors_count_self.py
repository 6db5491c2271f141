# A method's "takes N positional arguments" counts self, as CPython's
# binding of a `def` does.
import random
from pathlib import Path

calls = {
    "choice": lambda: random.choice([1, 2], 2),
    "randint": lambda: random.randint(1, 2, 3),
    "gauss": lambda: random.gauss(1, 2, 3),
    "seed": lambda: random.seed(1, 2, 3),
    "shuffle": lambda: random.Random(1).shuffle([1], None),
    "glob": lambda: list(Path(".").glob("*", "x")),
}
errors = {}
for name, call in calls.items():
    try:
        call()
    except TypeError as e:
        errors[name] = str(e)
errors
