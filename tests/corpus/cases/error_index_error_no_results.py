resp = await search_docs("graphql", page=1)
top = resp["results"][0]
top["title"]
