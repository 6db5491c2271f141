#!/usr/bin/env python3
"""Command tool `add`: prints a + b."""
import json
import sys

args = json.load(sys.stdin)["arguments"]
print(json.dumps(args["a"] + args["b"]))
