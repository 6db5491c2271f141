# Save a summary of two reports with an explicit encoding and read it back.
# monty's `Path.read_text`/`write_text` take no encoding ("takes no keyword
# arguments"), so `auto` runs this on CPython.
from pathlib import Path

totals = {}
for quarter in ["2024-q1", "2024-q2"]:
    f = await read_file(f"/reports/{quarter}.csv")
    rows = f["content"].strip().splitlines()[1:]
    totals[quarter] = round(sum(float(r.split(",")[1]) for r in rows), 2)

out = Path("summary.txt")
written = out.write_text("".join(f"{q}: {t:.2f} €\n" for q, t in totals.items()), encoding="utf-8")
back = out.read_text(encoding="utf-8")
print(back, end="")
{"chars": written, "lines": back.splitlines()}
