# Warehouses come in the inventory service's order; report them that way.
skus = ["SKU-RED", "SKU-BLUE", "SKU-GREEN"]
report = {}
for sku in skus:
    inv = await get_inventory(sku)
    stocked = {name: n for name, n in inv["warehouses"].items() if n > 0}
    report[sku] = {
        "warehouses": list(inv["warehouses"]),
        "in_stock": stocked,
        "total": sum(inv["warehouses"].values()),
    }
    print(sku, "->", ", ".join(f"{k}:{v}" for k, v in inv["warehouses"].items()) or "(none)")
report
