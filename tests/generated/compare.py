#!/usr/bin/env python3
"""Run scripts through the chainbox CLI under `--python auto` and on the
CPython guest, and print every difference a caller would see (status,
output, stdout line by line, error type and message).

    python3 tests/generated/compare.py target/release/chainbox DIR/*.py

Scripts that `auto` runs on CPython are counted, not compared.
"""
import concurrent.futures as cf
import json
import subprocess
import sys

BIN = sys.argv[1]
FILES = sys.argv[2:]


def run(path, python):
    p = subprocess.run([BIN, "run", path, "--json", "--python", python], capture_output=True, text=True, timeout=120)
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError:
        return {"status": "nojson", "stdout": p.stdout[-500:], "stderr": p.stderr[-500:]}


def view(r):
    err = r.get("error") or {}
    return {
        "status": r.get("status"),
        "output": r.get("output"),
        "output_text": r.get("output_text"),
        "stdout": r.get("stdout"),
        "error": (err.get("type"), err.get("message")) if err else None,
    }


def check(path):
    a = run(path, "auto")
    if a.get("interpreter") != "monty":
        return path, "cpython", None
    c = run(path, "cpython")
    va, vc = view(a), view(c)
    if json.dumps(va) == json.dumps(vc):
        return path, "same", None
    diffs = []
    for k in va:
        if va[k] != vc[k]:
            if k == "stdout" and va[k] and vc[k]:
                la, lc = va[k].splitlines(), vc[k].splitlines()
                for x, y in zip(la, lc):
                    if x != y:
                        diffs.append(f"  stdout monty:   {x}\n  stdout cpython: {y}")
                if len(la) != len(lc):
                    diffs.append(f"  stdout lines {len(la)} vs {len(lc)}")
            else:
                diffs.append(f"  {k} monty:   {json.dumps(va[k])[:600]}\n  {k} cpython: {json.dumps(vc[k])[:600]}")
    return path, "differs", "\n".join(diffs)


counts = {}
with cf.ThreadPoolExecutor(2) as ex:
    for path, verdict, diffs in ex.map(check, FILES):
        counts[verdict] = counts.get(verdict, 0) + 1
        if diffs:
            print(f"== {path}\n{diffs}", flush=True)
print(counts)
