"""Placeholder CPython guest for host development (replaced by the real module)."""
import json
import wit_world
from wit_world.imports import host


class WitWorld(wit_world.WitWorld):
    def run(self, request: str) -> str:
        req = json.loads(request)
        ns = {}
        try:
            value = eval(compile(req["script"], "main.py", "eval"), ns)
            result = {"status": "ok", "output": value, "output_text": repr(value)}
        except BaseException as e:
            result = {"status": "error", "compile": False, "exc_type": type(e).__name__, "message": str(e), "line": None, "traceback": "", "memory_limit": False}
        host.stdout("hello\n")
        return json.dumps({"result": result, "warnings": []})
