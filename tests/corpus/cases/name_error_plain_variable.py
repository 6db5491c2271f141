# A plain undefined variable (not a call) in the summary.
orders = await list_orders("C200")
total = sum(o["amount"] for o in orders["orders"])
{"total": total, "count": count}
