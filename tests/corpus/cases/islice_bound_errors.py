# itertools.islice's bound errors, worded per bound as CPython's islice_new.
import itertools

out = []
for bounds in [(1, -1), (-1,), (-1, 2), (1, 2, 0), (None, -1), ("a",), (1, "a"), (2**70,), (1, 2**70), (-2,), (1, -2), (2**70, 1), (None, 2, None), (0, 3, 2)]:
    try:
        out.append(list(itertools.islice("abcd", *bounds)))
    except ValueError as e:
        out.append(str(e))
out
