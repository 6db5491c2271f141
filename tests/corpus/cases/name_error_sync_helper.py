# A sync helper calls a misspelled tool name (it would also be missing await).
def start_lookup(symbol):
    return get_stock(symbol)

pending = start_lookup("ACME")
pending
