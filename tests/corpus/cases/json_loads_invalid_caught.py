import json

# Parsing text that is not JSON: the script catches the error and moves on.
notes = await read_file("/reports/notes.txt")
try:
    data = json.loads(notes["content"])
except ValueError as e:
    print("not JSON:", type(e).__name__)
    data = {"raw": notes["content"].splitlines()}
data
