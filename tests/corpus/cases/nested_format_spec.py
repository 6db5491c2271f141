# Format specs built from variables, and %-style numbers.
quotes = [await get_stock_price(s) for s in ["ACME", "INITECH"]]
width, prec = 12, 3
for q in quotes:
    print(f"{q['symbol']:>{width}}|{q['price']:{width}.{prec}f}|")
    print("%-8s %8.2f %+5.1f%%" % (q["symbol"], q["price"], q["change_pct"]))
    print("%5d|%05.1f|%x|%r" % (len(q["symbol"]), q["price"], 255, q["currency"]))
"{:_>10}".format(quotes[0]["symbol"])
