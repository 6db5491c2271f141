# Sort query rows by salary descending, then name.
res = await run_query(sql="SELECT name, dept, salary, age FROM employees")
rows = res["rows"]
by_salary = sorted(rows, key=lambda r: (-r["salary"], r["name"]))
youngest = sorted(rows, key=lambda r: r["age"])[:2]
for r in by_salary:
    print(f"{r['name']:<8} {r['dept']:<6} {r['salary']:>8}")
{"top": [r["name"] for r in by_salary[:3]], "youngest": [r["name"] for r in youngest]}
