# Dependent calls: convert every non-USD order to USD, then total.
page = await list_orders("C100")
orders = page["orders"]
while page["next_cursor"]:
    page = await list_orders("C100", page["next_cursor"])
    orders += page["orders"]
total_usd = 0.0
converted = []
for o in orders:
    if o["currency"] == "USD":
        usd = o["amount"]
    else:
        c = await convert_currency(o["amount"], o["currency"], "USD")
        usd = c["amount"]
        converted.append(o["order_id"])
    total_usd += usd
{"total_usd": round(total_usd, 2), "converted": converted}
