# Checks a model writes on tool data: a failed `assert` carries only the
# message the script gave it (none for a bare one), as in CPython.
rows = [{"id": 1, "total": 40}, {"id": 2, "total": -5}]
seen = []
for row in rows:
    try:
        assert row["total"] >= 0
        seen.append(row["id"])
    except AssertionError as e:
        seen.append((repr(e), e.args, str(e)))
    try:
        assert row["total"] < 10, f"row {row['id']} total {row['total']} too high"
    except AssertionError as e:
        seen.append((repr(e), e.args))
try:
    assert len(rows) == 3, "count " + str(len(rows))
except AssertionError as e:
    seen.append(e.args)
seen
