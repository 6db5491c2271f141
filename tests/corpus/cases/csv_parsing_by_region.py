# Parse CSV text from a tool by hand and aggregate per region.
totals = {}
for quarter in ["2024-q1", "2024-q2"]:
    f = await read_file(f"/reports/{quarter}.csv")
    lines = f["content"].strip().split("\n")
    header = lines[0].split(",")
    for line in lines[1:]:
        row = dict(zip(header, line.split(",")))
        t = totals.setdefault(row["region"], {"revenue": 0.0, "units": 0})
        t["revenue"] = round(t["revenue"] + float(row["revenue"]), 2)
        t["units"] += int(row["units"])
best = max(totals, key=lambda r: totals[r]["revenue"])
print(f"best region: {best}")
totals
