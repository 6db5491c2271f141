import asyncio

listing = await list_files("/reports")
csvs = [name for name in listing["files"] if name.endswith(".csv")]
files = await asyncio.gather(*[read_file(f"/reports/{n}") for n in csvs])
sizes = {f["path"]: f["size"] for f in files}
lines = sum(f["content"].count("\n") for f in files)
{"csv_files": csvs, "sizes": sizes, "lines": lines, "others": [n for n in listing["files"] if n not in csvs]}
