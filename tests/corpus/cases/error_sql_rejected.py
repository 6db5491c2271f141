# A write query is refused by the tool; the script reports it and carries on.
statements = ["SELECT name FROM employees", "DELETE FROM employees", "SELECT * FROM events"]
outcome = {}
for sql in statements:
    try:
        res = await run_query(sql)
        outcome[sql] = res["row_count"]
    except RuntimeError as e:
        outcome[sql] = f"refused: {e}"
outcome
