# An async generator that pages through a feed, consumed with `async for`.
async def feed_items(url):
    page = 1
    while True:
        try:
            p = await get_page(url, page)
        except RuntimeError as e:
            if "404" in str(e):
                return
            raise
        for item in p["items"]:
            yield item
        page += 1

seen = []
async for item in feed_items("https://example.com/blog"):
    seen.append(item)
{"count": len(seen), "first": seen[0], "last": seen[-1]}
