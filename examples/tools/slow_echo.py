#!/usr/bin/env python3
"""Command tool `slow_echo`: sleeps `seconds`, then prints {"text": text, "slept": seconds}."""
import json
import sys
import time

args = json.load(sys.stdin)["arguments"]
time.sleep(args["seconds"])
print(json.dumps({"text": args["text"], "slept": args["seconds"]}))
