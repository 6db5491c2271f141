# await inside a list comprehension (sequential calls).
symbols = ["WAYNE", "GLOBX", "UMBRL"]
prices = [(await get_stock_price(s))["price"] for s in symbols]
dict(zip(symbols, prices))
