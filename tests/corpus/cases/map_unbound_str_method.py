# An unbound str method passed to map, a common idiom.
listing = await list_files("/reports")
upper = list(map(str.upper, listing["files"]))
stripped = [str.strip(s) for s in ["  a ", "b  "]]
{"upper": upper, "stripped": stripped}
