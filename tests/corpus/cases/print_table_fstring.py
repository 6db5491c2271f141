# A fixed-width table of quotes printed with f-string format specs.
symbols = ["ACME", "GLOBX", "INITECH", "UMBRL", "WAYNE"]
print(f"{'symbol':<10}|{'price':>10}|{'chg':>7}|{'cur':^5}")
print("-" * 35)
rows = []
for s in symbols:
    q = await get_stock_price(s)
    rows.append(q)
    print(f"{q['symbol']:<10}|{q['price']:>10,.2f}|{q['change_pct']:>+7.2f}|{q['currency']:^5}")
best = max(rows, key=lambda q: q["change_pct"])
f"best: {best['symbol']} ({best['change_pct']:+.2f}%)"
