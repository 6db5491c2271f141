"""Smoke test of the built CPython guest component, without cargo.

    python3 -m venv /tmp/wtvenv && /tmp/wtvenv/bin/pip install wasmtime==50.0.1
    /tmp/wtvenv/bin/python guest/cpython/smoke_component.py /tmp/cpython-guest.wasm [WORKSPACE]

Instantiates the component with the PyPI `wasmtime` package (WASIp2 plus a
fake `chainbox:guest/host` whose tools echo their arguments), runs a few
chains, prints each `Finish` and the host calls it made, and exits 1 if
one of them is not what it should be. A development aid: the real host is
the Rust one.
"""
import json
import sys
import time

from wasmtime import Engine, Store, WasiConfig
from wasmtime.component import Component, Linker

CHAINS = [
    ("answer", "x = {'b': 1, 'a': 2**70}\nx", lambda f: f["result"]["output"] == {"b": 1, "a": 2**70}),
    (
        "gather",
        "import asyncio\nprint('go')\nr = await asyncio.gather(echo(1), echo(2))\necho(3)\nr",
        lambda f: f["result"]["output"] == [{"x": 1}, {"x": 2}] and f["warnings"][0]["line"] == 4,
    ),
    (
        "asyncio.run",
        "import asyncio, time\nasync def main():\n    await asyncio.sleep(0.01)\n    time.sleep(0.01)\n    return await echo(x=5)\nasyncio.run(main())",
        lambda f: f["result"]["output"] == {"x": 5},
    ),
    ("blocked import", "import socket", lambda f: f["result"]["exc_type"] == "ImportError"),
    ("os.system", "import os\nos.system('ls')", lambda f: f["result"]["exc_type"] == "PermissionError"),
    ("syntax", "x = (", lambda f: f["result"]["compile"] is True),
    ("name hint", "ecco(1)", lambda f: "Did you mean: 'echo'" in f["result"]["message"]),
    ("exit", "import sys\nsys.exit(3)", lambda f: f["result"]["exc_type"] == "SystemExit"),
    ("recursion", "def f(n): return f(n + 1)\nf(0)", lambda f: f["result"]["exc_type"] == "RecursionError"),
    ("files", "open('out.txt', 'w').write('hi')\nimport os\nsorted(os.listdir('.'))", lambda f: "out.txt" in f["result"]["output"]),
    ("load_artifact", "load_artifact('sha256:00')", lambda f: f["result"]["output"] == {"handle": "sha256:00"}),
    (
        "tasks",
        "import asyncio\nasync def one(i):\n    return (await echo(i))['x']\n"
        "ts = [asyncio.create_task(one(i)) for i in range(3)]\n"
        "r = await asyncio.gather(*ts, asyncio.wait_for(asyncio.sleep(5), 0.01), return_exceptions=True)\n"
        "[x if isinstance(x, int) else type(x).__name__ for x in r]",
        lambda f: f["result"]["output"] == [0, 1, 2, "TimeoutError"],
    ),
    ("own coroutine", "async def h():\n    pass\nh()\n1", lambda f: f["warnings"] == [{"message": "coroutine 'h' was never awaited", "line": 3}]),
    ("thread", "import threading\nthreading.Thread(target=print).start()", lambda f: f["result"]["status"] == "error"),
    ("not preloaded", "import wave\n1", lambda f: f["result"]["exc_type"] == "ModuleNotFoundError"),
    ("memory", "x = ['a' * (1 << 28) for _ in range(20)]", lambda f: f["result"]["exc_type"] == "MemoryError"),
    ("deadlock", "import asyncio\nawait asyncio.Event().wait()", lambda f: "deadlock" in f["result"]["message"]),
    (
        "stdlib",
        "import json, re, statistics, decimal, datetime, zoneinfo, csv, io, hashlib, dataclasses\n"
        "statistics.mean([1, 2, 3]), str(decimal.Decimal('1.1') * 2), hashlib.sha256(b'').hexdigest()[:8]",
        lambda f: f["result"]["output"] == [2, "2.2", "e3b0c442"],
    ),
]


def main(argv):
    wasm = argv[1]
    workspace = argv[2] if len(argv) > 2 else None
    engine = Engine()
    started = time.time()
    component = Component.from_file(engine, wasm)
    print(f"compiled in {time.time() - started:.1f}s")
    failed = 0
    for name, script, check in CHAINS:
        calls, events = {}, []

        def start(_store, call_id, call):
            events.append(("start", call_id, call))
            calls[call_id] = json.loads(call)

        def wait(_store, message, timeout_ns):
            events.append(("wait", message, timeout_ns))
            ids = json.loads(message)["ids"]
            if not ids and timeout_ns:
                time.sleep(timeout_ns / 1e9)  # a host sleep parks the chain
            done = [[i, {"status": "ok", "value": calls.pop(i)["args"]}] for i in ids if i in calls]
            return json.dumps({"done": done})

        def load_artifact(_store, request):
            events.append(("load-artifact", request))
            return json.dumps({"status": "ok", "value": json.loads(request)})

        def stdout(_store, text):
            events.append(("stdout", text))

        linker = Linker(engine)
        linker.add_wasip2()
        with linker.root() as root:
            with root.add_instance("chainbox:guest/host@0.1.0") as host:
                host.add_func("start", start)
                host.add_func("wait", wait)
                host.add_func("load-artifact", load_artifact)
                host.add_func("stdout", stdout)
        store = Store(engine)
        wasi = WasiConfig()
        if workspace:
            wasi.preopen_dir(workspace, "/workspace")
        store.set_wasi(wasi)
        instance = linker.instantiate(store, component)
        run = instance.get_func(store, "run")
        request = {
            "version": 4,
            "script": script,
            "tools": [{"name": "echo", "params": ["x"]}],
            "limits": {"max_memory_bytes": 1 << 28, "max_recursion_depth": 200},
        }
        started = time.time()
        finish = json.loads(run(store, json.dumps(request)))
        run.post_return(store)
        ok = check(finish)
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name} ({time.time() - started:.3f}s): {json.dumps(finish)[:300]}")
        for event in events:
            print(f"       {event}")
    print(f"{len(CHAINS) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
