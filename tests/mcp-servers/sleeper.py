#!/usr/bin/env python3
"""Command tool `sleeper` for the cancellation tests: writes its pid to the
file named by its first argument, then sleeps `seconds` and answers
{"slept": seconds}. A test reads the pid to see whether the tool was killed."""
import json
import os
import sys
import time

args = json.load(sys.stdin)["arguments"]
with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
time.sleep(args["seconds"])
print(json.dumps({"slept": args["seconds"]}))
