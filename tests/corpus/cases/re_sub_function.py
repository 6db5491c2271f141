import re

# Mask slow-query durations in a log, rounding them to whole seconds.
log = await read_file("/logs/app.log")

def to_seconds(match):
    ms = int(match.group(1))
    return f"~{(ms + 500) // 1000}s"

masked = re.sub(r"(\d+)ms", to_seconds, log["content"])
levels = re.compile(r" (INFO|WARN|ERROR) ").sub(lambda m: f" [{m.group(1).lower()}] ", masked)
print(levels)
[line for line in levels.splitlines() if "[warn]" in line]
