import asyncio

# Pace calls with asyncio.sleep between them.
out = []
for sku in ["SKU-RED", "SKU-BLUE"]:
    inv = await get_inventory(sku)
    out.append(sum(inv["warehouses"].values()))
    await asyncio.sleep(0.05)
out
