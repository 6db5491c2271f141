import asyncio

# Tasks started up front, awaited later.
tasks = [asyncio.create_task(get_stock_price(s)) for s in ["ACME", "WAYNE"]]
quotes = [await t for t in tasks]
{q["symbol"]: q["price"] for q in quotes}
