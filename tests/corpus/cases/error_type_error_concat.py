resp = await search_docs("deploy")
message = "found " + resp["total"] + " documents"
message
