# Rounding amounts to cents with round(x, 2): CPython rounds the binary value.
c = await convert_currency(amount=2.675, from_currency="USD", to_currency="USD")
amounts = [c["amount"], 2.675, 1.005, 0.125, 0.375, 2.5, 3.5]
[round(a, 2) for a in amounts] + [round(2.5), round(3.5), round(-0.5)]
