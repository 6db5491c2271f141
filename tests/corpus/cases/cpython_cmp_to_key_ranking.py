from functools import cmp_to_key

# Rank stocks: rising ones first, then by price, with a comparison function.
symbols = ["ACME", "GLOBX", "INITECH", "UMBRL", "WAYNE"]
quotes = [await get_stock_price(s) for s in symbols]

def compare(a, b):
    rising_a, rising_b = a["change_pct"] > 0, b["change_pct"] > 0
    if rising_a != rising_b:
        return -1 if rising_a else 1
    return (a["price"] > b["price"]) - (a["price"] < b["price"])

[q["symbol"] for q in sorted(quotes, key=cmp_to_key(compare))]
