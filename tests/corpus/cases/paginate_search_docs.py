# Collect every search hit across pages, following next_page until it is None.
titles = []
page = 1
pages_seen = 0
while page is not None:
    resp = await search_docs(query="billing", page=page)
    pages_seen += 1
    for hit in resp["results"]:
        titles.append(hit["title"])
    page = resp["next_page"]

print(f"fetched {len(titles)} results over {pages_seen} pages")
{"query": "billing", "count": len(titles), "pages": pages_seen, "first": titles[0], "last": titles[-1]}
