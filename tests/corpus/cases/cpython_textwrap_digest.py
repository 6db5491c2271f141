import textwrap

# A fixed-width digest of the notes file and the deploy docs.
notes = await read_file("/reports/notes.txt")
docs = await search_docs(query="deploy")
body = textwrap.fill(notes["content"].replace("\n", " "), width=28)
titles = [textwrap.shorten(r["title"] + " for operators and on-call engineers", width=30, placeholder="...") for r in docs["results"]]
digest = body + "\n\n" + textwrap.indent("\n".join(titles), "  - ")
print(digest)
digest.count("\n")
