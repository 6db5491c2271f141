import asyncio

# Progress printed by each task before its call, then a summary after the gather.
async def fetch(sym):
    print(f"fetching {sym}")
    q = await get_stock_price(sym)
    return q["price"]

prices = await asyncio.gather(fetch("ACME"), fetch("GLOBX"), fetch("WAYNE"))
print("prices:", prices)
sum(prices)
