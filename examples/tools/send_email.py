#!/usr/bin/env python3
"""Command tool `send_email` (risk: high): sends nothing, prints {"sent": true}."""
import json
import sys

json.load(sys.stdin)
print(json.dumps({"sent": True}))
