# Ordering two deques compares their first items that are not ==, so an
# error names those items' types, not collections.deque.
from collections import deque

out = []
for a, b in [(deque([1]), deque(["a"])), (deque([1, 2]), deque([1, "x"])), (deque([None]), deque([None, 1])), (deque([3, 1]), deque([3, 2]))]:
    try:
        out.append(a < b)
    except TypeError as e:
        out.append(str(e))
out
