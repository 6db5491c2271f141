import asyncio

async def total_for(customer):
    page = await list_orders(customer)
    return sum(o["amount"] for o in page["orders"])

good = await total_for("C200")
print("C200:", good)
bad = await total_for("C999")
{"C200": good, "C999": bad}
