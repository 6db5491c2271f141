# A small order model with classes, a dataclass and the usual exceptions.
import asyncio
from dataclasses import dataclass, field


@dataclass
class Line:
    sku: str
    qty: int = 1
    tags: list = field(default_factory=list)
    note: str = field(default="")


class Basket:
    def __init__(self, owner):
        self.owner = owner
        self.lines = []

    def size(self):
        return len(self.lines)

    def __contains__(self, sku):
        return any([line.sku == sku for line in self.lines])

    def __iter__(self):
        return iter(self.lines)

    def __eq__(self, other):
        return self.owner == other.owner

    def __add__(self, other):
        return len(self.lines) + len(other.lines)

    def __str__(self):
        return f"Basket({self.owner}, {self.size()} lines)"

    def add(self, sku, qty=1):
        if qty <= 0:
            raise ValueError(f"bad quantity for {sku}: {qty}")
        self.lines.append(Line(sku, qty))


basket = Basket("amy")
problems = []
for sku, qty in [("a1", 2), ("b2", 0), ("c3", 1)]:
    try:
        basket.add(sku, qty)
    except ValueError as e:
        problems.append(str(e))
    finally:
        problems.append(f"tried {sku}")

try:
    {}["missing"]
except (KeyError, IndexError) as e:
    problems.append(e.args)

try:
    try:
        int("x")
    except ValueError as e:
        raise RuntimeError("could not parse") from e
except RuntimeError as e:
    problems.append([str(e), type(e).__name__])

users = await asyncio.gather(*[get_user(user_id=i) for i in (1, 2)])
if __name__ == "__main__":
    problems.append("main")
{"basket": str(basket), "len": basket.size(), "has": ["a1" in basket, "zz" in basket], "skus": [line.sku for line in basket], "problems": problems, "users": [u["name"] for u in users], "line": repr(Line("x")), "eq": basket == Basket("amy"), "sum": basket + basket}
