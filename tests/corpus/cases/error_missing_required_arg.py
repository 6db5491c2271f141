# A required argument is forgotten: the refusal is not caught.
rate = await convert_currency(amount=250, to_currency="JPY")
rate["amount"]
