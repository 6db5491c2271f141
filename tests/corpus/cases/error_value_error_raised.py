# The script validates what it got and raises its own ValueError.
resp = await search_docs(query="kubernetes")
if resp["total"] == 0:
    raise ValueError(f"no documents match {resp['query']!r}")
resp["results"]
