import re

log = (await read_file("/logs/app.log"))["content"]
errors = re.findall(r"ERROR (.+)", log)
slow = [int(ms) for ms in re.findall(r"slow query (\d+)ms", log)]
levels = {}
for line in log.splitlines():
    m = re.match(r"(\S+) (INFO|WARN|ERROR) ", line)
    if m:
        levels[m.group(2)] = levels.get(m.group(2), 0) + 1
first_error = re.search(r"^(\S+) ERROR", log, re.MULTILINE)
cleaned = re.sub(r"\d{4}-\d{2}-\d{2}T", "", log.splitlines()[0])
{"errors": errors, "slowest_ms": max(slow), "levels": levels, "first_error_at": first_error.group(1), "cleaned": cleaned}
