# GROUP BY in the script: average salary per department, in first-seen order.
res = await run_query("SELECT name, dept, salary FROM employees")
groups = {}
for row in res["rows"]:
    groups.setdefault(row["dept"], []).append(row["salary"])
summary = {
    dept: {"count": len(s), "avg": round(sum(s) / len(s), 2), "max": max(s)}
    for dept, s in groups.items()
}
print(summary)
summary
