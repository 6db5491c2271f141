# Float results printed and returned: repr, round and arithmetic.
q = await get_stock_price("GLOBX")
c = await convert_currency(amount=0.1, from_currency="USD", to_currency="EUR")
vals = [q["price"] * 3, 0.1 + 0.2, c["amount"], c["rate"], round(q["price"] / 7, 4), 1e16, 1.5e-5, 100.0, 2 ** 0.5]
print(vals)
print([str(v) for v in vals[:3]], round(0.5), round(1.5), int(-2.7))
vals
