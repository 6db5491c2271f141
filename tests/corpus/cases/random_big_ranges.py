# A seeded generator over ranges wider than 64 bits: the same draws as CPython
# (monty read the bounds as i64 and raised OverflowError), and the errors for
# empty ranges are ValueErrors (their wording changed in 3.12: not compared).
import random

random.seed(20261204)
draws = {
    "token": random.randrange(2**65),
    "id": random.randint(10**20, 10**21),
    "stepped": random.randrange(10, 2**66, 3),
    "negative": random.randrange(-(2**70), 0, 7),
    "wide": random.randrange(2**128 + 5),
    "small_after": [random.randint(1, 6) for _ in range(5)],
}
errors = []
for bounds in [(2**65, 100, 3), (2**64, 2**64)]:
    try:
        random.randrange(*bounds)
    except ValueError as e:
        errors.append(type(e).__name__)
try:
    random.sample(["a", "b"], 1, counts=[0.5])
except (ValueError, TypeError) as e:
    errors.append(f"{type(e).__name__}: {e}")
{"draws": draws, "errors": errors}
