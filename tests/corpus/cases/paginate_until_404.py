# Read pages until the feed returns a 404 error, then stop.
items = []
page = 1
while True:
    try:
        resp = await get_page("https://example.com/news", page)
    except RuntimeError as e:
        if "404" in str(e):
            print(f"stopped at page {page}: {e}")
            break
        raise
    items += resp["items"]
    page += 1

{"pages_read": page - 1, "items": len(items), "sample": items[:2]}
