#!/usr/bin/env python3
"""A small MCP server over stdio (raw JSON-RPC lines, no SDK) for the
`chainbox serve` tests. It writes its pid to PID_FILE and appends every
message it receives, one JSON object a line, to LOG_FILE, so a test can see
which calls reached it and whether `notifications/cancelled` did.

Tools: `slow(seconds)` answers after `seconds` (in a thread: the server
keeps reading meanwhile), `quick(tag)` answers `tag` at once.

With `--stubborn` it is a server that will not stop: it ignores SIGTERM and
SIGINT, and keeps running after its stdin closes. Only SIGKILL ends it.

Usage: recording_server.py LOG_FILE PID_FILE [--stubborn]
"""
import json
import os
import signal
import sys
import threading
import time

log_path, pid_path = sys.argv[1], sys.argv[2]
stubborn = "--stubborn" in sys.argv[3:]
if stubborn:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
with open(pid_path, "w") as f:
    f.write(str(os.getpid()))

out_lock = threading.Lock()
log_lock = threading.Lock()

TOOLS = [
    {
        "name": "slow",
        "description": "Answers after `seconds`.",
        "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}, "required": ["seconds"]},
    },
    {
        "name": "quick",
        "description": "Answers its tag at once.",
        "inputSchema": {"type": "object", "properties": {"tag": {"type": "string"}}, "required": ["tag"]},
    },
]


def log(entry):
    with log_lock, open(log_path, "a") as f:
        f.write(json.dumps(entry) + "\n")


def send(message):
    try:
        with out_lock:
            sys.stdout.write(json.dumps(message) + "\n")
            sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        pass


def call(request_id, params):
    name = params.get("name")
    args = params.get("arguments") or {}
    if name == "slow":
        time.sleep(float(args.get("seconds", 0)))
        log({"finished": request_id})
        text = "slept"
    else:
        text = str(args.get("tag", ""))
    send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}]}})


def handle(message):
    method, request_id, params = message.get("method"), message.get("id"), message.get("params") or {}
    if method is None or request_id is None:
        return  # a notification or a response: logged, nothing to answer
    if method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "recording", "version": "0"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "ping":
        result = {}
    elif method == "tools/call":
        threading.Thread(target=call, args=(request_id, params), daemon=True).start()
        return
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"no method {method}"}})
        return
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    try:
        message = json.loads(line)
    except ValueError:
        continue
    log(message)
    handle(message)

log({"stdin": "closed"})
while stubborn:
    time.sleep(3600)
