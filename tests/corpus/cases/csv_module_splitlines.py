import csv

# csv.reader over the text's lines (no file object needed).
f = await read_file("/reports/2024-q1.csv")
rows = list(csv.reader(f["content"].splitlines()))
header, data = rows[0], rows[1:]
units = {r[0]: int(r[2]) for r in data}
{"header": header, "units": units, "total_units": sum(units.values())}
