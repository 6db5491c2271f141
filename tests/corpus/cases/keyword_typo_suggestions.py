# A model's helpers and builtins called with misspelled keywords: CPython
# 3.14 suggests the closest parameter name in the TypeError's message
# ("Did you mean 'price'?"), for `def`s, methods, nested functions, lambdas,
# dataclasses and builtins alike, and says nothing when no name is close.
import json
from dataclasses import dataclass

page = await list_orders(customer_id="C100")
orders = page["orders"]


def order_total(order, tax_rate=0.0, discount=0.0):
    return round(order["amount"] * (1 + tax_rate) - discount, 2)


def make_formatter(currency):
    def format_amount(amount, decimals=2):
        return f"{amount:.{decimals}f} {currency}"
    return format_amount


class Report:
    def add_line(self, label, amount, *, highlight=False):
        return f"{'*' if highlight else ''}{label}: {amount}"


@dataclass
class Summary:
    customer_id: str
    order_count: int
    total_amount: float = 0.0


def first_two(a, b, /, *, sep=", "):
    return f"{a}{sep}{b}"


fmt = make_formatter("EUR")
discount = lambda amount, percent=10: amount * (100 - percent) / 100
errors = []
for call in [
    lambda: order_total(orders[0], tax_rte=0.2),
    lambda: order_total(orders[0], tax_rate=0.2, Discount=1),
    lambda: fmt(10, decimal=1),
    lambda: Report().add_line("total", 5, higlight=True),
    lambda: discount(100, pecrent=5),
    lambda: Summary("C100", order_cnt=3),
    lambda: first_two(1, 2, a=1),
    lambda: first_two(1, 2, sepp="; "),
    lambda: order_total(orders[0], vat=0.2),
    lambda: sorted(orders, key=lambda o: o["amount"], reversed=True),
    lambda: json.dumps(orders, indnet=2),
    lambda: "a,b".split(sepp=","),
    lambda: print("x", ends=""),
    lambda: max([o["amount"] for o in orders], defualt=0),
]:
    try:
        call()
    except TypeError as e:
        errors.append(str(e))

total = sum(order_total(o, tax_rate=0.1) for o in orders)
{"total": round(total, 2), "errors": errors}
