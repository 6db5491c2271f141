from dataclasses import dataclass

@dataclass
class Order:
    order_id: str
    amount: float
    currency: str
    status: str

    def is_open(self):
        return self.status in ("pending", "shipped")

orders = []
cursor = None
while True:
    page = await list_orders("C100", cursor)
    orders += [Order(o["order_id"], o["amount"], o["currency"], o["status"]) for o in page["orders"]]
    cursor = page["next_cursor"]
    if cursor is None:
        break

open_orders = sorted([o for o in orders if o.is_open()], key=lambda o: o.amount, reverse=True)
print(open_orders[0])
open_orders
