# Portfolio positions with a computed property, sorted by their own ordering.
class Position:
    def __init__(self, symbol, shares, price):
        self.symbol = symbol
        self.shares = shares
        self.price = price

    @property
    def value(self):
        return round(self.shares * self.price, 2)

    def __lt__(self, other):
        return self.value < other.value

holdings = {"ACME": 10, "WAYNE": 2, "INITECH": 150}
positions = []
for symbol, shares in holdings.items():
    q = await get_stock_price(symbol)
    positions.append(Position(symbol, shares, q["price"]))
[(p.symbol, p.value) for p in sorted(positions, reverse=True)]
