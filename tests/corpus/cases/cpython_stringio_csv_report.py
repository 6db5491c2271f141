import csv
import io

# Build a CSV report in memory from a query, then read it back.
result = await run_query("SELECT name, dept, salary FROM employees")
out = io.StringIO()
writer = csv.DictWriter(out, fieldnames=["dept", "name", "salary"], lineterminator="\n")
writer.writeheader()
for row in sorted(result["rows"], key=lambda r: (r["dept"], -r["salary"])):
    writer.writerow({k: row[k] for k in ["dept", "name", "salary"]})
text = out.getvalue()
print(text, end="")
back = list(csv.DictReader(io.StringIO(text)))
{"lines": len(text.splitlines()), "top_eng": back[0]["name"], "depts": sorted({r["dept"] for r in back})}
