import asyncio

holdings = {"WAYNE": 3, "ACME": 10, "INITECH": 250, "GLOBX": 7}
quotes = await asyncio.gather(*[get_stock_price(symbol=s) for s in holdings])
total = 0.0
lines = []
for q in quotes:
    value = q["price"] * holdings[q["symbol"]]
    total += value
    lines.append(f"{q['symbol']:<8}{holdings[q['symbol']]:>5} x {q['price']:>8.2f} = {value:>10.2f}  ({q['change_pct']:+.1f}%)")
print("\n".join(lines))
print(f"{'TOTAL':<8}{total:>32.2f}")
{"total": round(total, 2), "positions": len(quotes), "losers": [q["symbol"] for q in quotes if q["change_pct"] < 0]}
