# Walrus operator drives the pagination loop.
page, seen = 1, []
while (resp := await get_page("https://example.com/blog", page))["page"] < resp["last_page"]:
    seen += resp["items"]
    page += 1
seen += resp["items"]
{"pages": page, "items": seen}
