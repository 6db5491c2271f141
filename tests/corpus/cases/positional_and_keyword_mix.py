# Positional arguments map onto the schema's parameters in order.
a = await convert_currency(100, "USD", "EUR")
b = await convert_currency(100, "EUR", to_currency="GBP")
c = await get_forecast("Lima", 2)
d = await search_docs("search", 2, page_size=2)
{"a": a["amount"], "b": b["amount"], "days": len(c["days"]), "d_page": d["page"], "d_ids": [r["id"] for r in d["results"]]}
