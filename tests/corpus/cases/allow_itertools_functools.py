# Grouping and combining order lines with itertools and functools.
import functools
import itertools
from collections import Counter, deque

page = await list_users(page=1)
names = [u["name"] for u in page["users"]]
lines = [("a", 2), ("a", 3), ("b", 1), ("c", 4), ("c", 1)]
grouped = {k: [q for _, q in g] for k, g in itertools.groupby(lines, key=lambda line: line[0])}
running = list(itertools.accumulate([q for _, q in lines]))
seeded = list(itertools.accumulate([1, 2, 3], initial=10))
kept = list(itertools.compress("abcdef", [1, 0, 1, 0, 1, 0]))
chained = list(itertools.chain(names, ["extra"]))
pairs = [list(p) for p in itertools.combinations("abc", 2)]
with_rep = len(list(itertools.combinations_with_replacement("ab", 2)))
perms = ["".join(p) for p in itertools.permutations("ab")]
prod = list(itertools.product([0, 1], repeat=2))
both = list(itertools.product("ab", [1, 2]))
dropped = list(itertools.dropwhile(lambda x: x < 3, [1, 2, 3, 1]))
taken = list(itertools.takewhile(lambda x: x < 3, [1, 2, 3, 1]))
odd = list(itertools.filterfalse(lambda x: x % 2 == 0, range(6)))
starred = list(itertools.starmap(pow, [(2, 3), (3, 2)]))
zipped = list(itertools.zip_longest("ab", "xyz", fillvalue="-"))
first = list(itertools.islice(itertools.count(5), 3))
cycled = list(itertools.islice(itertools.cycle("xy"), 5))
repeated = list(itertools.repeat("r", 3))
paired = list(itertools.pairwise([1, 2, 4]))
total = functools.reduce(lambda acc, line: acc + line[1], lines, 0)
to_int = functools.partial(int, base=2)
recent = deque([1, 2, 3], maxlen=2)
recent.append(4)
tally = Counter(a=2, b=1)
tally.update(["a", "c"])
{
    "grouped": grouped, "running": running, "seeded": seeded, "kept": kept, "chained": chained,
    "pairs": pairs, "with_rep": with_rep, "perms": perms, "prod": prod, "both": both,
    "dropped": dropped, "taken": taken, "odd": odd, "starred": starred, "zipped": zipped,
    "first": first, "cycled": cycled, "repeated": repeated, "paired": paired,
    "total": total, "binary": to_int("101"), "recent": list(recent),
    "tally": [tally.total(), sorted(tally.elements()), tally.most_common(1)],
}
