from collections import namedtuple
from dataclasses import dataclass
from decimal import Decimal


@dataclass
class Order:
    id: int
    total: float


class Cart:
    def __init__(self, items):
        self.items = items


Point = namedtuple("Point", "x y")
parts = Decimal("12.50").as_tuple()

{
    "classes": [repr(Order), str(Cart), repr(type(Cart([]))), repr(Point), repr(type(Point(1, 2)))],
    "instances": [repr(Order(1, 9.5)), repr(Point(1, 2))],
    "decimal_tuple": [type(parts).__name__, repr(type(parts)), repr(parts), parts._asdict(), parts.digits],
}
