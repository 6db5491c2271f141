from pathlib import Path
Path("/workspace/a.txt").write_text("hello")
print(open("/workspace/a.txt").read())
list(Path("/workspace").iterdir())