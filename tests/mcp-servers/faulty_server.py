#!/usr/bin/env python3
"""A misbehaving MCP stdio server for chainbox's upstream tests.

It speaks just enough JSON-RPC by hand (no MCP SDK): `initialize`,
`tools/list`, `ping` and `tools/call`. Each tool misbehaves in one way when
called, so one test drives one fault:

  echo(text)      answers `text`: a well-behaved call
  slow(seconds)   answers after `seconds`, from a thread: the server keeps
                  reading, so it still answers `ping` meanwhile
  block()         blocks the server's only loop: it never reads or answers again
  huge(mb)        answers with one line of `mb` megabytes
  garbage()       answers with a line that is not JSON
  bad_utf8()      answers with a line that is not UTF-8
  wrong_id()      answers with an id it was never sent
  no_result()     answers with neither `result` nor `error`
  deep(depth)     answers with a result nested `depth` levels deep
  not_a_result()  answers with a result that is no tool result

Modes, from argv:
  --never-start   writes to stderr, then never answers `initialize`
  --banner        writes a line that is not JSON to stdout before anything
"""

import json
import sys
import threading
import time

out = sys.stdout.buffer
lock = threading.Lock()


def write(line: bytes) -> None:
    with lock:
        out.write(line + b"\n")
        out.flush()


def send(message: dict) -> None:
    write(json.dumps(message).encode())


def result(id_, value: dict) -> None:
    send({"jsonrpc": "2.0", "id": id_, "result": value})


def text(value: str) -> dict:
    return {"content": [{"type": "text", "text": value}]}


def tool(name: str, **props: str) -> dict:
    properties = {k: {"type": t} for k, t in props.items()}
    return {"name": name, "description": f"the {name} fault", "inputSchema": {"type": "object", "properties": properties}}


TOOLS = [
    tool("echo", text="string"),
    tool("slow", seconds="number"),
    tool("block"),
    tool("huge", mb="integer"),
    tool("garbage"),
    tool("bad_utf8"),
    tool("wrong_id"),
    tool("no_result"),
    tool("deep", depth="integer"),
    tool("not_a_result"),
]


def call(id_, name: str, args: dict) -> None:
    if name == "echo":
        result(id_, text(args.get("text", "")))
    elif name == "slow":
        def later() -> None:
            time.sleep(float(args.get("seconds", 1)))
            result(id_, text("slept"))
        threading.Thread(target=later, daemon=True).start()
    elif name == "block":
        sys.stderr.write("faulty: blocking for good\n")
        sys.stderr.flush()
        time.sleep(3600)
    elif name == "huge":
        filler = "x" * (int(args.get("mb", 20)) * 1000 * 1000)
        result(id_, text(filler))
    elif name == "garbage":
        write(b"this is not json")
    elif name == "bad_utf8":
        head = json.dumps({"jsonrpc": "2.0", "id": id_, "result": text("@")}).encode()
        write(head.replace(b"@", b"\xff\xfe"))
    elif name == "wrong_id":
        result(id_ + 1000 if isinstance(id_, int) else "wrong", text("for someone else"))
    elif name == "no_result":
        send({"jsonrpc": "2.0", "id": id_})
    elif name == "deep":
        depth = int(args.get("depth", 100000))
        head = json.dumps({"jsonrpc": "2.0", "id": id_, "result": {"content": [], "structuredContent": "@"}})
        before, after = head.split('"@"')
        write((before + "[" * depth + "]" * depth + after).encode())
    elif name == "not_a_result":
        result(id_, {"content": "not a list of blocks"})
    else:
        send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32602, "message": f"no tool {name}"}})


def main() -> None:
    if "--never-start" in sys.argv:
        sys.stderr.write("faulty: loading a model that never finishes loading\n")
        sys.stderr.flush()
        time.sleep(3600)
        return
    if "--banner" in sys.argv:
        write(b"faulty server ready")
    for line in sys.stdin.buffer:
        message = json.loads(line)
        method, id_ = message.get("method"), message.get("id")
        if id_ is None:
            continue  # notifications: initialized, cancelled
        if method == "initialize":
            version = message["params"].get("protocolVersion", "2025-06-18")
            result(id_, {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "faulty", "version": "1"},
            })
        elif method == "tools/list":
            result(id_, {"tools": TOOLS})
        elif method == "ping":
            result(id_, {})
        elif method == "tools/call":
            params = message["params"]
            call(id_, params["name"], params.get("arguments") or {})
        else:
            send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": f"no method {method}"}})


if __name__ == "__main__":
    main()
