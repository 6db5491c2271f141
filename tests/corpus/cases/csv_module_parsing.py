import csv
import io

f = await read_file("/reports/2024-q2.csv")
reader = csv.DictReader(io.StringIO(f["content"]))
rows = [r for r in reader]
revenue = {r["region"]: float(r["revenue"]) for r in rows}
{"regions": list(revenue), "total": round(sum(revenue.values()), 2)}
