# PurePath.match: a relative pattern matches from the right, part by part,
# an absolute one the whole path; `*`, `?` and `[...]` as in fnmatch.
from pathlib import Path

files = ["/workspace/src/app.py", "/workspace/src/tests/test_app.py", "/workspace/README.md",
         "/workspace/.env", "/workspace/docs/guide.MD", "/workspace/data/2024-01.csv", "notes/todo.txt"]
patterns = ["*.py", "src/*.py", "/workspace/*.md", "/workspace/*", "tests/test_?*.py", "*.[mM][dD]",
            "*/*/*.csv", ".*", "*", "[!.]*", "data/202[0-4]-*.csv", "*.txt", "notes/*"]
table = {pattern: [f for f in files if Path(f).match(pattern)] for pattern in patterns}
try:
    Path("a").match("")
except ValueError as e:
    empty = str(e)
{"table": table, "empty": empty, "src": Path("src/app.py").match("src/*.py")}
