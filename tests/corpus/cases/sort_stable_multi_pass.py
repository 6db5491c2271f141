# Two stable sorts: by age descending, then by department.
res = await run_query("select * from employees")
rows = list(res["rows"])
rows.sort(key=lambda r: r["age"], reverse=True)
rows.sort(key=lambda r: r["dept"])
[(r["dept"], r["name"], r["age"]) for r in rows]
