from dataclasses import dataclass

@dataclass(frozen=True)
class Quote:
    symbol: str
    price: float

q = await get_stock_price("acme")
quote = Quote(q["symbol"], q["price"])
try:
    quote.price = 0.0
    changed = True
except Exception as e:
    changed = False
    print(type(e).__name__)
print(quote)
quote
