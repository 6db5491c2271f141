"""The differential corpus (tests/corpus) through the built CPython guest
component, without cargo: each case runs in the component with a fake host
whose tools are `tests/corpus/tools.py` (schema failures are `invalid`,
tool failures `error`, as reference.py makes them), and its result,
stdout, error type and warnings are compared with `expected/<case>.json`.

    /tmp/wtvenv/bin/python guest/cpython/corpus_component.py /tmp/cpython-guest.wasm

(Needs PyPI `wasmtime`, see smoke_component.py; run from the repository root.)
"""
import json, sys, tomllib, importlib.util
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2] / "tests" / "corpus"))
import reference as R
from wasmtime import Engine, Store, WasiConfig
from wasmtime.component import Component, Linker
engine = Engine(); comp = Component.from_file(engine, sys.argv[1])
tools = [{"name": t["name"], "params": list(t.get("input_schema", {}).get("properties", {}))} for t in R.MANIFEST["tool"]]
bad = 0; n = 0
for case in sorted(R.CASES.glob("*.py")):
    n += 1
    exp = json.loads((R.EXPECTED / f"{case.stem}.json").read_text())
    calls = {}; out = []
    def start(_s, i, c): calls[i] = json.loads(c)
    def wait(_s, m, t):
        done = []
        for i in json.loads(m)["ids"]:
            c = calls.pop(i, None)
            if c is None: continue
            prob = R.schema_error(R.SCHEMAS[c["tool"]], c["args"], c["tool"])
            if prob: done.append([i, {"status": "invalid", "message": prob}]); continue
            try: done.append([i, {"status": "ok", "value": json.loads(json.dumps(R.TOOLS.call(c["tool"], c["args"])))}])
            except Exception as e: done.append([i, {"status": "error", "message": R.failure_message(R.TOOLS.error_message(e) + "\n")}])
        return json.dumps({"done": done})
    linker = Linker(engine); linker.add_wasip2()
    with linker.root() as root:
        with root.add_instance("chainbox:guest/host@0.1.0") as h:
            h.add_func("start", start); h.add_func("wait", wait)
            h.add_func("load-artifact", lambda s, r: '{"status":"error","message":"no"}')
            h.add_func("stdout", lambda s, t: out.append(t))
    store = Store(engine); store.set_wasi(WasiConfig())
    inst = linker.instantiate(store, comp); run = inst.get_func(store, "run")
    req = {"version": 4, "script": case.read_text(), "tools": tools, "limits": {"max_memory_bytes": 1 << 28, "max_recursion_depth": 200}}
    f = json.loads(run(store, json.dumps(req))); run.post_return(store)
    r = f["result"]
    got = {"status": r["status"], "output": r.get("output"), "output_text": r.get("output_text", ""),
           "stdout": "".join(out), "error_type": r.get("exc_type"), "warnings": [w["message"] for w in f["warnings"]]}
    if r["status"] == "error": got["output"] = None
    diffs = [k for k in got if got[k] != exp[k]]
    if diffs:
        bad += 1
        print("DIFF", case.stem, diffs, {k: (got[k], exp[k]) for k in diffs}, (r.get("message") if r["status"]=="error" else "")[:200])
print(f"{n - bad} passed, {bad} failed")
sys.exit(1 if bad else 0)
