# Two good calls, then a typo: the good calls stay in the trace.
a = await get_stock_price("ACME")
b = await get_stock_price("GLOBX")
print(a["price"] + b["price"])
c = await get_stock_quote("WAYNE")
[a, b, c]
