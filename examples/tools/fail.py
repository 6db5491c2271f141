#!/usr/bin/env python3
"""Command tool `fail`: prints `message` on stderr and exits 1 (a tool error)."""
import json
import sys

args = json.load(sys.stdin)["arguments"]
print(args["message"], file=sys.stderr)
sys.exit(1)
