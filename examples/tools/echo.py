#!/usr/bin/env python3
"""Command tool `echo`: prints {"text": text}."""
import json
import sys

args = json.load(sys.stdin)["arguments"]
print(json.dumps({"text": args["text"]}))
