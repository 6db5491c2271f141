# finally runs whether or not the call fails; else runs on success.
log = []
for sym in ["ACME", "NOPE"]:
    try:
        q = await get_stock_price(sym)
    except RuntimeError as e:
        log.append(f"{sym}: error {e}")
    else:
        log.append(f"{sym}: {q['price']}")
    finally:
        log.append(f"{sym}: done")
log
