"""Native tests of the CPython guest (the `chainbox_guest` package).

    python3 guest/cpython/tests/test_guest.py

They run the guest package in this machine's CPython with a fake host that
answers tool calls in-process, and check the `Finish` it returns and the
host calls it makes. (the built component is tested through the engine by `tests/it`.)
"""
import ast
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
sys.dont_write_bytecode = True

import chainbox_guest  # noqa: E402
from chainbox_guest import linux_errno, reports, suggestions  # noqa: E402


class FakeHost:
    """The `host` interface, in-process. `tools` maps a tool name to a
    function of the call's args returning a CallOutcome dict. `call` answers
    at once; `start` only records the call; `wait` answers every started
    call it is asked about (or, with `hold`, only those not held back)."""

    def __init__(self, tools=None, hold=()):
        self.tools = tools or {}
        self.hold = set(hold)
        self.events = []
        self.calls = {}
        self.artifacts = {}

    def call(self, call):
        call = json.loads(call)
        self.events.append(("call", call))
        return json.dumps(self.tools[call["tool"]](call["args"]))

    def start(self, call_id, call):
        call = json.loads(call)
        self.events.append(("start", call_id, call))
        self.calls[call_id] = call

    def wait(self, message, timeout_ns):
        ids = json.loads(message)["ids"]
        self.events.append(("wait", ids, timeout_ns))
        done = []
        for call_id in ids:
            call = self.calls.get(call_id)
            if call is None or call["tool"] in self.hold:
                continue
            del self.calls[call_id]
            done.append([call_id, self.tools[call["tool"]](call["args"])])
        return json.dumps({"done": done})

    def cancel(self, call_id):
        self.events.append(("cancel", call_id))
        self.calls.pop(call_id, None)

    def load_artifact(self, request):
        self.events.append(("load_artifact", json.loads(request)))
        return json.dumps({"status": "ok", "value": {"loaded": json.loads(request)["handle"]}})

    def stdout(self, text):
        self.events.append(("stdout", text))

    def cell(self, index):
        self.events.append(("cell", index))

    def cells(self):
        return [e[1] for e in self.events if e[0] == "cell"]

    def tool_calls(self):
        return [e for e in self.events if e[0] in ("call", "start")]

    def kinds(self):
        return [e[0] for e in self.events]

    def printed(self):
        return "".join(e[1] for e in self.events if e[0] == "stdout")


def ok(value):
    return {"status": "ok", "value": value}


def echo(args):
    return ok(args)


TOOLS = [
    {"name": "echo", "params": ["a", "b"]},
    {"name": "get_weather", "params": ["city"]},
]


def run(script, host=None, tools=TOOLS, version=6, recursion=500, workspace=None, cells=None, session=False, continued=False):
    host = host if host is not None else FakeHost({"echo": echo, "get_weather": echo})
    request = {
        "version": version,
        "script": script,
        "tools": tools,
        "limits": {"max_memory_bytes": 1 << 30, "max_recursion_depth": recursion},
    }
    if cells is not None:
        request["cells"] = cells
    if session:
        request["session"] = True
    if continued:
        request["continued"] = True
    text = chainbox_guest.run_chain(json.dumps(request), host, workspace or "/nonexistent-workspace")
    return json.loads(text), host


def answer_in_empty_workspace(script):
    """The script's answer, run in an empty workspace of its own."""
    with tempfile.TemporaryDirectory() as workspace:
        finish, _ = run(script, workspace=workspace)
    return finish["result"]["output"]


class Answers(unittest.TestCase):
    def test_key_order_and_big_ints_survive(self):
        finish, _ = run("{'z': 1, 'a': 2**100, 'm': [1.5, None, True]}")
        self.assertEqual(finish["result"]["status"], "ok")
        self.assertEqual(list(finish["result"]["output"]), ["z", "a", "m"])
        self.assertEqual(finish["result"]["output"]["a"], 2**100)
        self.assertEqual(finish["warnings"], [])

    def test_tuples_and_sets_become_lists_dataclasses_objects(self):
        finish, _ = run(
            "from dataclasses import dataclass\n"
            "@dataclass\nclass P:\n    x: int\n    y: tuple\n"
            "(1, frozenset([2]), P(1, (2, 3)), {1: 'a', None: 'b', False: 'c', 2.5: 'd'})"
        )
        self.assertEqual(
            finish["result"]["output"], [1, [2], {"x": 1, "y": [2, 3]}, {"1": "a", "null": "b", "false": "c", "2.5": "d"}]
        )
        self.assertEqual(finish["result"]["output_text"], "(1, frozenset({2}), P(x=1, y=(2, 3)), {1: 'a', None: 'b', False: 'c', 2.5: 'd'})")

    def test_non_json_answer_is_its_repr(self):
        finish, _ = run("object")
        self.assertEqual(finish["result"]["output"], "<class 'object'>")
        finish, _ = run("float('nan')")
        self.assertEqual(finish["result"]["output"], "nan")

    def test_str_answer_text_is_the_str(self):
        finish, _ = run("'a\\nb'")
        self.assertEqual(finish["result"]["output"], "a\nb")
        self.assertEqual(finish["result"]["output_text"], "a\nb")

    def test_no_final_expression_is_none(self):
        finish, _ = run("x = 1")
        self.assertEqual(finish["result"]["output"], None)
        self.assertEqual(finish["result"]["output_text"], "None")

    def test_version_mismatch_is_an_internal_error(self):
        finish, host = run("await echo(1)", version=5)
        self.assertEqual(finish["result"]["exc_type"], "InternalError")
        self.assertIn("host 5, guest 6", finish["result"]["message"])
        self.assertEqual(host.events, [])

    def test_malformed_request_is_an_internal_error(self):
        text = chainbox_guest.run_chain("{not json", FakeHost())
        self.assertEqual(json.loads(text)["result"]["exc_type"], "InternalError")

    def test_run_twice_leaks_nothing(self):
        run("import os\nx = 1")
        finish, host = run("print(x)")
        self.assertEqual(finish["result"]["exc_type"], "NameError")
        finish, host = run("await echo(1)")
        self.assertEqual(host.events[0], ("call", {"tool": "echo", "args": {"a": 1}}))
        self.assertIs(sys.stdout, sys.__stdout__)


class ToolCalls(unittest.TestCase):
    def test_positional_and_keyword_arguments(self):
        finish, host = run("await echo(1, b=(2, 3))")
        self.assertEqual(host.events[0], ("call", {"tool": "echo", "args": {"a": 1, "b": [2, 3]}}))
        self.assertEqual(finish["result"]["output"], {"a": 1, "b": [2, 3]})

    def test_a_call_awaited_alone_crosses_to_the_host_once(self):
        finish, host = run("a = await echo(1)\nb = await echo(2)\n[a, b]")
        self.assertEqual(host.kinds(), ["call", "call"])
        self.assertEqual(finish["result"]["output"], [{"a": 1}, {"a": 2}])

    def test_a_call_awaited_while_a_task_is_ready_starts_and_waits(self):
        finish, host = run(
            "import asyncio\nt = asyncio.create_task(echo(1))\nb = await echo(2)\n[await t, b]"
        )
        self.assertEqual([e[0] for e in host.tool_calls()], ["start", "start"])
        self.assertEqual(finish["result"]["output"], [{"a": 1}, {"a": 2}])

    def test_too_many_positional_arguments(self):
        finish, host = run("await get_weather('a', 'b')")
        self.assertEqual(finish["result"]["exc_type"], "TypeError")
        self.assertEqual(finish["result"]["message"], "get_weather() takes 1 positional argument but 2 were given")
        self.assertEqual(host.tool_calls(), [])
        finish, _ = run("await echo(1, 2, 3)")
        self.assertEqual(finish["result"]["message"], "echo() takes 2 positional arguments but 3 were given")

    def test_duplicate_argument(self):
        finish, _ = run("await echo(1, a=2)")
        self.assertEqual(finish["result"]["message"], "echo() got multiple values for argument 'a'")

    def test_unconvertible_argument_is_a_type_error(self):
        finish, _ = run("await echo(object())")
        self.assertEqual(finish["result"]["exc_type"], "TypeError")
        self.assertIn("not JSON serializable", finish["result"]["message"])
        finish, _ = run("await echo(float('inf'))")
        self.assertEqual(finish["result"]["exc_type"], "TypeError")

    def test_tool_is_an_async_function_named_after_the_tool(self):
        finish, _ = run("import inspect\n(echo.__name__, echo.__qualname__, inspect.iscoroutinefunction(echo))")
        self.assertEqual(finish["result"]["output"], ["echo", "echo", True])

    def test_outcome_statuses_raise_the_matching_exception(self):
        cases = {
            "error": "RuntimeError",
            "denied": "PermissionError",
            "timeout": "TimeoutError",
            "invalid": "ValueError",
            "not_found": "NameError",
        }
        for status, exc_type in cases.items():
            host = FakeHost({"echo": lambda args, s=status: {"status": s, "message": f"{s}!"}})
            finish, _ = run("x = 1\nawait echo(1)", host=host)
            result = finish["result"]
            self.assertEqual((result["exc_type"], result["message"], result["line"]), (exc_type, f"{status}!", 2))
            self.assertNotIn("chainbox_guest", result["traceback"])

    def test_outcome_can_be_caught(self):
        host = FakeHost({"echo": lambda args: {"status": "denied", "message": "no"}})
        finish, _ = run("try:\n    await echo(1)\nexcept PermissionError as e:\n    r = str(e)\nr", host=host)
        self.assertEqual(finish["result"]["output"], "no")

    def test_a_malformed_call_outcome_fails_the_call(self):
        host = FakeHost({"echo": echo})
        host.call = lambda message: "garbage"
        finish, _ = run("await echo(1)", host=host)
        self.assertEqual(finish["result"]["exc_type"], "RuntimeError")
        self.assertIn("malformed call outcome", finish["result"]["message"])

    def test_a_call_without_arguments_sends_an_empty_args_object(self):
        host = FakeHost({"echo": echo})
        finish, host = run("await echo()", host=host)
        self.assertEqual(finish["result"]["output"], {})
        self.assertEqual(host.tool_calls(), [("call", {"tool": "echo", "args": {}})])

    def test_a_compact_success_gives_its_value_exactly(self):
        # The host's own encoding, which the guest reads by its value alone.
        host = FakeHost()
        host.call = lambda message: '{"status":"ok","value":{"b":[1,2.0,"\\u00e9"],"a":null}}'
        finish, _ = run("repr(await echo(1))", host=host)
        self.assertEqual(finish["result"]["output"], "{'b': [1, 2.0, '\u00e9'], 'a': None}")

    def test_a_success_with_more_after_its_value_is_read_whole(self):
        host = FakeHost()
        host.call = lambda message: '{"status":"ok","value":1,"note":"x"}'
        finish, _ = run("await echo(1)", host=host)
        self.assertEqual(finish["result"]["output"], 1)

    def test_a_truncated_success_fails_the_call(self):
        host = FakeHost()
        host.call = lambda message: '{"status":"ok","value":[1'
        finish, _ = run("await echo(1)", host=host)
        self.assertEqual(finish["result"]["exc_type"], "RuntimeError")
        self.assertIn("malformed call outcome", finish["result"]["message"])

    def test_an_argument_that_cannot_be_utf8_fails_the_call_before_the_host(self):
        finish, host = run("await echo('\\udc80')")
        self.assertEqual(finish["result"]["exc_type"], "UnicodeEncodeError")
        self.assertEqual(host.tool_calls(), [])

    def test_malformed_completions_fail_the_awaited_calls(self):
        host = FakeHost({"echo": echo})
        host.wait = lambda message, timeout: "garbage"
        finish, _ = run("import asyncio\nawait asyncio.gather(echo(1), echo(2))", host=host)
        self.assertEqual(finish["result"]["exc_type"], "RuntimeError")
        self.assertIn("malformed completions", finish["result"]["message"])

    def test_load_artifact_is_a_plain_function(self):
        finish, host = run("load_artifact({'artifact_ref': 'sha256:ab'})")
        self.assertEqual(finish["result"]["output"], {"loaded": {"artifact_ref": "sha256:ab"}})
        self.assertEqual(host.kinds(), ["load_artifact"])

    def test_a_tool_named_load_artifact_wins(self):
        tools = [{"name": "load_artifact", "params": ["handle"]}]
        host = FakeHost({"load_artifact": echo})
        finish, host = run("await load_artifact('h')", host=host, tools=tools)
        self.assertEqual(finish["result"]["output"], {"handle": "h"})
        self.assertEqual(host.kinds(), ["call"])


class Concurrency(unittest.TestCase):
    def test_gather_starts_every_call_before_waiting(self):
        finish, host = run("import asyncio\nawait asyncio.gather(echo(1), echo(2), get_weather('x'))")
        self.assertEqual(host.kinds(), ["start", "start", "start", "wait"])
        self.assertEqual(host.events[3], ("wait", [1, 2, 3], None))
        self.assertEqual(finish["result"]["output"], [{"a": 1}, {"a": 2}, {"city": "x"}])

    def test_gather_return_exceptions(self):
        host = FakeHost({"echo": echo, "get_weather": lambda a: {"status": "error", "message": "down"}})
        finish, _ = run(
            "import asyncio\nr = await asyncio.gather(echo(1), get_weather('x'), return_exceptions=True)\n"
            "[type(x).__name__ for x in r]",
            host=host,
        )
        self.assertEqual(finish["result"]["output"], ["dict", "RuntimeError"])

    def test_create_task_and_as_completed_and_semaphore(self):
        finish, host = run(
            "import asyncio\n"
            "sem = asyncio.Semaphore(2)\n"
            "async def one(i):\n    async with sem:\n        return (await echo(i))['a']\n"
            "tasks = [asyncio.create_task(one(i)) for i in range(5)]\n"
            "got = sorted([await t for t in asyncio.as_completed(tasks)])\n"
            "got"
        )
        self.assertEqual(finish["result"]["output"], [0, 1, 2, 3, 4])
        self.assertEqual(host.kinds()[:3], ["start", "start", "wait"])

    def test_asyncio_sleep_and_time_sleep_wait_on_the_host(self):
        finish, host = run("import asyncio, time\nawait asyncio.sleep(0.02)\ntime.sleep(1.5)\n'done'")
        self.assertEqual(finish["result"]["output"], "done")
        sleeps = [e for e in host.events if e[0] == "wait"]
        self.assertTrue(all(ids == [] for _, ids, _ in sleeps))
        self.assertLessEqual(sleeps[0][2], 20_000_000)
        self.assertEqual(sleeps[-1][2], 1_500_000_000)

    def test_wait_for_passes_its_timeout_to_the_host(self):
        host = FakeHost({"echo": echo}, hold={"echo"})
        finish, host = run("import asyncio\nawait asyncio.wait_for(echo(1), 0.05)", host=host)
        self.assertEqual(finish["result"]["exc_type"], "TimeoutError")
        timeouts = [t for kind, ids, t in (e for e in host.events if e[0] == "wait") if ids == [1]]
        self.assertTrue(timeouts and all(t is not None and t <= 50_000_000 for t in timeouts), host.events)

    def test_a_call_the_script_stops_waiting_for_is_cancelled_on_the_host(self):
        host = FakeHost({"echo": echo}, hold={"echo"})
        script = "import asyncio\ntry:\n    await asyncio.wait_for(echo(1), 0.05)\nexcept TimeoutError:\n    pass\nt = asyncio.create_task(echo(2))\nawait asyncio.sleep(0)\nt.cancel()\nawait asyncio.sleep(0)\n'done'"
        finish, host = run(script, host=host)
        self.assertEqual(finish["result"]["output"], "done")
        self.assertEqual([e for e in host.events if e[0] == "cancel"], [("cancel", 1), ("cancel", 2)])

    def test_a_call_that_answers_is_not_cancelled(self):
        finish, host = run("import asyncio\nawait asyncio.gather(echo(1), echo(2))")
        self.assertNotIn("cancel", host.kinds())

    def test_asyncio_run_in_a_script(self):
        finish, host = run("import asyncio\nasync def main():\n    return await echo(7)\nasyncio.run(main())")
        self.assertEqual(finish["result"]["output"], {"a": 7})

    def test_get_event_loop_run_until_complete(self):
        finish, _ = run("import asyncio\nloop = asyncio.get_event_loop()\nloop.run_until_complete(echo(8))")
        self.assertEqual(finish["result"]["output"], {"a": 8})

    def test_deadlock_ends_the_chain(self):
        finish, _ = run("import asyncio\nawait asyncio.Event().wait()")
        self.assertEqual(finish["result"]["exc_type"], "RuntimeError")
        self.assertIn("deadlock", finish["result"]["message"])


class Warnings(unittest.TestCase):
    def test_never_awaited_tool_call_with_its_line(self):
        finish, host = run("x = 1\nc = echo(1)\nd = get_weather(\n  'x')\n5")
        self.assertEqual(finish["result"]["output"], 5)
        self.assertEqual(
            finish["warnings"],
            [
                {"message": "coroutine 'echo' was never awaited", "line": 2},
                {"message": "coroutine 'get_weather' was never awaited", "line": 3},
            ],
        )
        self.assertEqual(host.tool_calls(), [])

    def test_never_awaited_own_coroutine(self):
        finish, _ = run("async def helper():\n    return 1\nhelper()\n2")
        self.assertEqual(finish["warnings"], [{"message": "coroutine 'helper' was never awaited", "line": 3}])

    def test_awaited_calls_do_not_warn(self):
        finish, _ = run("c = echo(1)\nawait c")
        self.assertEqual(finish["warnings"], [])


class Errors(unittest.TestCase):
    def test_syntax_error_is_a_compile_error_with_its_line(self):
        finish, _ = run("x = 1\ny = (\n")
        result = finish["result"]
        self.assertTrue(result["compile"])
        self.assertEqual((result["exc_type"], result["line"]), ("SyntaxError", 2))

    def test_runtime_error_line_and_traceback(self):
        finish, _ = run("def f():\n    return 1 / 0\nf()")
        result = finish["result"]
        self.assertFalse(result["compile"])
        self.assertEqual((result["exc_type"], result["message"], result["line"]), ("ZeroDivisionError", "division by zero", 2))
        self.assertTrue(result["traceback"].startswith("Traceback (most recent call last):\n  File \"main.py\", line 3"))
        self.assertIn("return 1 / 0", result["traceback"])

    def test_name_error_close_to_a_tool_gets_the_hint(self):
        finish, _ = run("get_wether('x')")
        self.assertEqual(finish["result"]["message"], "name 'get_wether' is not defined. Did you mean: 'get_weather'?")
        finish, _ = run("totally_else")
        self.assertEqual(finish["result"]["message"], "name 'totally_else' is not defined")

    def test_missing_await_hint(self):
        finish, _ = run("r = echo(1)\nr['a']")
        self.assertEqual(finish["result"]["exc_type"], "TypeError")
        self.assertTrue(finish["result"]["message"].endswith(reports.MISSING_AWAIT_HINT))

    def test_system_exit_and_keyboard_interrupt_are_reported(self):
        finish, _ = run("import sys\nsys.exit(2)")
        self.assertEqual((finish["result"]["exc_type"], finish["result"]["message"]), ("SystemExit", "2"))
        finish, _ = run("exit()")
        self.assertEqual(finish["result"]["exc_type"], "SystemExit")
        finish, _ = run("import asyncio\nawait asyncio.sleep(0)\nraise KeyboardInterrupt")
        self.assertEqual(finish["result"]["exc_type"], "KeyboardInterrupt")

    def test_recursion_limit(self):
        finish, _ = run("def f(n):\n    return f(n + 1)\nf(0)", recursion=100)
        self.assertEqual(finish["result"]["exc_type"], "RecursionError")
        finish, _ = run("def f(n):\n    return 0 if n == 0 else f(n - 1)\nf(80)", recursion=100)
        self.assertEqual(finish["result"]["output"], 0)

    def test_huge_message_is_bounded(self):
        finish, _ = run("raise ValueError('x' * 1_000_000)")
        self.assertLessEqual(len(finish["result"]["message"]), reports.MAX_REPORTED_CHARS)
        self.assertLess(len(finish["result"]["traceback"]), 3 * reports.MAX_REPORTED_CHARS)

    def test_failing_repr_of_the_answer_is_a_script_error(self):
        finish, _ = run("class X:\n    def __repr__(self):\n        raise KeyError('r')\nX()")
        self.assertEqual(finish["result"]["exc_type"], "KeyError")

    def test_guest_bug_is_an_internal_error(self):
        host = FakeHost()
        host.stdout = None  # calling it raises TypeError inside the guest
        finish, _ = run("print('x')", host=host)
        self.assertEqual(finish["result"]["status"], "error")


class Sessions(unittest.TestCase):
    """A session's run (`RunRequest.cells`): its earlier cells run first, in
    one namespace, as Python's REPL runs its inputs."""

    def test_names_persist_across_cells(self):
        cells = ["x = 1", "def f():\n    return x + 1", "class C:\n    v = 3", "import math"]
        finish, host = run("[x, f(), C.v, math.floor(2.5)]", cells=cells)
        self.assertEqual(finish["result"]["output"], [1, 2, 3, 2])
        self.assertEqual(finish["warnings"], [])

    def test_one_main_module_for_every_cell(self):
        cells = ["import sys\nm = sys.modules['__main__']", "def g():\n    return globals()"]
        finish, _ = run("[m is sys.modules['__main__'], __name__, g() is globals()]", cells=cells)
        self.assertEqual(finish["result"]["output"], [True, "__main__", True])

    def test_an_exception_ends_only_its_own_cell(self):
        cells = [
            "a = 1\nraise ValueError('boom')\nb = 2",
            "import sys\nc = 3\nsys.exit(1)",
            "d = 4\nraise KeyboardInterrupt",
            "import asyncio\ne = 5\nawait asyncio.sleep(0)\n1 / 0",
            "f = 6",
        ]
        finish, host = run("[a, c, d, e, f, 'b' in globals()]", cells=cells)
        self.assertEqual(finish["result"]["output"], [1, 3, 4, 5, 6, False])
        self.assertEqual(host.cells(), [0, 1, 2, 3, 4, 5])

    def test_an_earlier_cell_that_does_not_compile_is_skipped(self):
        finish, host = run("[x, y]", cells=["x = 1", "y = (", "y = 2"])
        self.assertEqual(finish["result"]["output"], [1, 2])
        self.assertEqual(host.cells(), [0, 1, 2, 3])

    def test_a_new_cell_that_does_not_compile_is_reported_as_a_script(self):
        finish, host = run("x = 1\ny = (", cells=["x = 1"])
        result = finish["result"]
        self.assertTrue(result["compile"])
        self.assertEqual((result["exc_type"], result["line"]), ("SyntaxError", 2))
        self.assertIn('File "<python-input-1>", line 2', result["traceback"])
        self.assertEqual(host.events, [])

    def test_earlier_cells_output_is_not_sent(self):
        cells = ["print('old')", "import sys\nsys.stdout.write('partial')", "await echo(1)\nprint('after a call')"]
        finish, host = run("print('new')\nsys.stdout.write('!')", cells=cells)
        self.assertEqual(host.printed(), "new\n!")
        self.assertEqual(finish["result"]["status"], "ok")

    def test_an_earlier_value_is_not_the_answer(self):
        finish, _ = run("y = 1", cells=["41 + 1", "'still not'"])
        self.assertEqual((finish["result"]["output"], finish["result"]["output_text"]), (None, "None"))
        finish, _ = run("x", cells=["x = 41 + 1", "x"])
        self.assertEqual(finish["result"]["output"], 42)
        finish, _ = run("'__chain_answer__' in globals()", cells=["5"])
        self.assertEqual(finish["result"]["output"], False)

    def test_the_host_hears_of_each_cell_before_its_calls(self):
        finish, host = run("await echo(3)", cells=["await echo(1)", "x = 1", "await echo(2)"])
        self.assertEqual(
            [e[1] if e[0] == "cell" else e[2 if e[0] == "start" else 1]["args"]["a"] for e in host.events
             if e[0] in ("cell", "call", "start")],
            [0, 1, 1, 2, 2, 3, 3],
        )
        self.assertEqual(host.kinds(), ["cell", "call", "cell", "cell", "call", "cell", "call"])

    def test_earlier_cells_tool_calls_are_answered_by_the_host(self):
        cells = [
            "r = await echo(1)",
            "import asyncio\ng = await asyncio.gather(echo(2), get_weather('x'))",
            "async def main():\n    return await echo(4)\nm = asyncio.run(main())",
            "art = load_artifact('h')",
        ]
        finish, host = run("[r, g, m, art]", cells=cells)
        self.assertEqual(finish["result"]["output"], [{"a": 1}, [{"a": 2}, {"city": "x"}], {"a": 4}, {"loaded": "h"}])
        self.assertEqual(host.kinds(), ["cell", "call", "cell", "start", "start", "wait", "cell", "call", "cell", "load_artifact", "cell"])

    def test_a_traceback_through_an_earlier_cell_shows_its_line(self):
        finish, _ = run("x = 1\nf()", cells=["def f():\n    return 1 / 0"])
        result = finish["result"]
        self.assertEqual((result["exc_type"], result["line"]), ("ZeroDivisionError", 2))
        tb = result["traceback"]
        self.assertTrue(tb.startswith('Traceback (most recent call last):\n  File "<python-input-1>", line 2, in <module>\n    f()\n'), tb)
        self.assertIn('  File "<python-input-0>", line 2, in f\n    return 1 / 0\n', tb)
        self.assertTrue(tb.endswith("ZeroDivisionError: division by zero\n"), tb)
        self.assertNotIn("chainbox_guest", tb)

    def test_the_sources_are_only_the_runs(self):
        import linecache

        finish, _ = run("import inspect\ninspect.getsource(f)", cells=["def f():\n    return 1"])
        self.assertEqual(finish["result"]["output"], "def f():\n    return 1")
        self.assertNotIn("<python-input-0>", linecache.cache)
        self.assertNotIn("<python-input-1>", linecache.cache)

    def test_without_cells_the_script_is_main_py(self):
        for cells in (None, []):
            finish, host = run("def f():\n    return 1 / 0\nf()", cells=cells)
            self.assertTrue(finish["result"]["traceback"].startswith('Traceback (most recent call last):\n  File "main.py", line 3'))
            self.assertEqual(host.cells(), [])

    def test_earlier_cells_coroutines_never_awaited_do_not_warn(self):
        cells = [
            "c = echo(1)",  # alive until the chain ends
            "echo(2)\nasync def h():\n    pass\nh()",  # collected at once
            "def make():\n    return echo(3)",
        ]
        finish, host = run("x = 1\nget_weather('x')\nd = get_weather('y')\nmake()\n5", cells=cells)
        self.assertEqual(finish["result"]["output"], 5)
        self.assertEqual(
            finish["warnings"],
            [
                {"message": "coroutine 'get_weather' was never awaited", "line": 2},
                # Made by an earlier cell's function: no line of the new cell.
                {"message": "coroutine 'echo' was never awaited", "line": None},
                # `d` is not collected: a session's names live on, as in
                # Python's REPL.
            ],
        )
        self.assertEqual(host.tool_calls(), [])

    def test_a_first_cell_is_python_input_0_and_the_host_hears_of_it(self):
        finish, host = run("def f():\n    return 1 / 0\nf()", session=True)
        self.assertTrue(finish["result"]["traceback"].startswith('Traceback (most recent call last):\n  File "<python-input-0>", line 3'))
        self.assertEqual(host.cells(), [0])

    def test_a_continued_run_goes_on_in_the_namespace_the_last_run_kept(self):
        cells = ["import math, random\nx = random.random()\nr = await echo(1)"]
        first, _ = run(cells[0] + "\nx", session=True)
        finish, host = run("[x, r, math.floor(2.5)]", cells=cells, continued=True)
        self.assertEqual(finish["result"]["output"], [first["result"]["output"], {"a": 1}, 2])
        # The earlier cell did not run again: no call, only the new cell heard of.
        self.assertEqual(host.kinds(), ["cell"])
        self.assertEqual(host.cells(), [1])

    def test_a_continued_run_keeps_the_names_a_raising_cell_bound(self):
        run("y = 2\n1 / 0", session=True)
        finish, _ = run("y", cells=["y = 2\n1 / 0"], continued=True)
        self.assertEqual(finish["result"]["output"], 2)

    def test_a_tool_an_earlier_cell_bound_calls_through_the_running_chain(self):
        cells = ["from functools import partial\np = partial(echo, 1)\nasync def twice():\n    return [await echo(2), await p(3)]"]
        run(cells[0], session=True)
        finish, host = run("await twice()", cells=cells, continued=True)
        self.assertEqual(finish["result"]["output"], [{"a": 2}, {"a": 1, "b": 3}])
        self.assertEqual(len(host.tool_calls()), 2)

    def test_a_continued_run_with_nothing_kept_is_an_internal_error(self):
        run("x = 1")  # a chain's run keeps nothing
        finish, host = run("x", cells=["x = 1"], continued=True)
        self.assertEqual(finish["result"]["exc_type"], "InternalError")
        self.assertEqual(host.kinds(), [])

    def test_a_malformed_cells_list_is_an_internal_error(self):
        for cells in ("x = 1", [1], None, {"0": "x"}):
            host = FakeHost()
            request = {"version": 6, "script": "1", "tools": [], "limits": {}, "cells": cells}
            finish = json.loads(chainbox_guest.run_chain(json.dumps(request), host))
            self.assertEqual(finish["result"]["exc_type"], "InternalError", cells)
            self.assertIn("malformed run request", finish["result"]["message"])
            self.assertEqual(host.events, [])

    def test_a_failing_cell_call_is_the_guests_failure(self):
        host = FakeHost({"echo": echo})

        def cell(index):
            raise RuntimeError("host gone")

        host.cell = cell
        finish, _ = run("1", host=host, cells=["x = 1"])
        self.assertEqual(finish["result"]["exc_type"], "InternalError")
        self.assertIn("host gone", finish["result"]["message"])
        self.assertIs(sys.stdout, sys.__stdout__)

    def test_each_cell_starts_at_the_chains_recursion_limit(self):
        cells = ["import sys\nsys.setrecursionlimit(50)", "def f(n):\n    return 0 if n == 0 else f(n - 1)\nok = f(80)"]
        finish, _ = run("[ok, f(80)]", cells=cells, recursion=100)
        self.assertEqual(finish["result"]["output"], [0, 0])

    def test_a_session_leaks_nothing_into_the_next_chain(self):
        run("1", cells=["leak = 1\nprint('x')"])
        finish, host = run("print('y')\nleak")
        self.assertEqual(finish["result"]["exc_type"], "NameError")
        self.assertEqual(host.printed(), "y\n")


class Sandbox(unittest.TestCase):
    def test_blocked_imports(self):
        for module in ("socket", "subprocess", "ctypes", "multiprocessing", "select", "signal", "urllib.request"):
            finish, _ = run(f"import {module}")
            self.assertEqual(finish["result"]["exc_type"], "ImportError", module)
            self.assertIn("not available in the chainbox sandbox", finish["result"]["message"])
        import socket  # noqa: F401  (restored for the rest of the process)

    def test_process_functions_are_refused(self):
        for call in ("os.system('ls')", "os.popen('ls')", "os.kill(1, 9)", "os.execv('/bin/sh', ['sh'])"):
            finish, _ = run(f"import os\n{call}")
            self.assertEqual(finish["result"]["exc_type"], "PermissionError", call)
        self.assertFalse(os.system.__module__.startswith("chainbox_guest"))

    def test_input_is_eof(self):
        finish, _ = run("input()")
        self.assertEqual(finish["result"]["exc_type"], "EOFError")

    def test_relative_paths_land_in_the_workspace(self):
        with tempfile.TemporaryDirectory() as workspace:
            before = os.getcwd()
            finish, _ = run("open('f.txt', 'w').write('hi')\nimport os\nos.getcwd()", workspace=workspace)
            self.assertEqual(finish["result"]["output"], os.path.realpath(workspace))
            self.assertTrue(os.path.exists(os.path.join(workspace, "f.txt")))
            self.assertEqual(os.getcwd(), before)

    def test_open_keeps_its_arguments_and_appends_then_reads_back(self):
        script = (
            "open(file='log.txt', mode='w').write('a\\n')\n"
            "f = open('log.txt', 'a+', encoding='utf-8')\n"
            "f.write('b\\n'); f.seek(0)\n"
            "text = f.read(); f.close()\n"
            "g = open('log.txt', 'ab+', buffering=0)\n"
            "g.write(b'c'); g.seek(0)\n"
            "[text, f.mode, g.read().decode(), g.mode, open('log.txt').read()]"
        )
        self.assertEqual(answer_in_empty_workspace(script), ["a\nb\n", "a+", "a\nb\nc", "ab+", "a\nb\nc"])

    def test_an_empty_path_is_no_file(self):
        script = (
            "import os\n"
            "def fails(f, *a):\n"
            "    try:\n"
            "        f(*a)\n"
            "    except FileNotFoundError as e:\n"
            "        return [e.filename, e.filename2]\n"
            "[fails(os.listdir, ''), fails(open, ''), fails(os.rename, 'a', ''), os.path.exists('')]"
        )
        self.assertEqual(answer_in_empty_workspace(script), [["", None], ["", None], ["a", ""], False])


class Stdout(unittest.TestCase):
    def test_print_goes_to_the_host_in_order_with_tool_calls(self):
        finish, host = run("print('a')\nprint('b', end='')\nawait echo(1)\nprint('c')\nimport sys\nsys.stdout.write('d')")
        self.assertEqual(
            [e[0] if e[0] != "stdout" else e[1] for e in host.events], ["a\n", "b", "call", "c\n", "d"]
        )

    def test_stderr_is_discarded(self):
        finish, host = run("import sys\nprint('x', file=sys.stderr)\n1")
        self.assertEqual(host.printed(), "")
        self.assertEqual(finish["result"]["output"], 1)

    def test_long_line_streams_out(self):
        finish, host = run("import sys\nsys.stdout.write('x' * 20000)\nsys.stdout.write('y')")
        self.assertEqual(host.printed(), "x" * 20000 + "y")
        self.assertGreaterEqual(host.kinds().count("stdout"), 2)


class Suggestions(unittest.TestCase):
    def test_matches_cpythons_choices(self):
        close = suggestions.closest_name
        self.assertEqual(close("get_wether", ["get_weather", "load_artifact"]), "get_weather")
        self.assertEqual(close("Echo", ["echo"]), "echo")
        self.assertIsNone(close("xyz", ["get_weather"]))
        # CPython 3.14's `_Py_CalculateSuggestions`: one insertion is close
        # enough for a short name, names compare as UTF-8 bytes, the first of
        # equally close candidates wins, 750 candidates are too many.
        self.assertEqual(close("a", ["ab"]), "ab")
        self.assertEqual(close("cafe", ["café"]), "café")
        self.assertIsNone(close("ab", ["aé"]))
        self.assertEqual(close("ab", ["abc", "abd"]), "abc")
        self.assertIsNone(close("n7", [f"n{i}" for i in range(750)]))
        self.assertEqual(close("a" * 45 + "x", ["a" * 45 + "y"]), "a" * 45 + "y")


class LinuxErrno(unittest.TestCase):
    def test_the_scripts_errno_module_has_linuxs_numbers(self):
        module = linux_errno._linux_errno_module()
        self.assertEqual([module.ENOENT, module.EEXIST, module.EACCES, module.EISDIR], [2, 17, 13, 21])
        self.assertEqual(module.errorcode[2], "ENOENT")
        # Of aliases, errorcode names the one CPython's own table names.
        self.assertEqual(module.errorcode[module.EAGAIN], errno_name(module.EAGAIN))

    def test_nothing_is_renumbered_on_linux(self):
        self.assertEqual(linux_errno._linux_errno_for_wasi(), {})


class Package(unittest.TestCase):
    def test_its_modules_import_each_other_without_a_cycle(self):
        # The package is layered (its `__init__` lists the modules in
        # order): a module never imports one that imports it back.
        package = os.path.dirname(chainbox_guest.__file__)
        imports = {}
        for name in sorted(os.listdir(package)):
            if name.endswith(".py") and name != "__init__.py":
                with open(os.path.join(package, name), encoding="utf-8") as f:
                    tree = ast.parse(f.read())
                imports[name[:-3]] = {
                    target
                    for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and node.level == 1
                    for target in ([node.module] if node.module else [a.name for a in node.names])
                }
        done = set()

        def visit(module, path):
            self.assertNotIn(module, path, f"import cycle: {' -> '.join(path + [module])}")
            if module not in done:
                for target in sorted(imports.get(module, ())):
                    visit(target, path + [module])
                done.add(module)

        for module in imports:
            visit(module, [])

    def test_every_module_is_imported_by_the_package(self):
        # What the package does not import is not in the snapshot.
        package = os.path.dirname(chainbox_guest.__file__)
        modules = {n[:-3] for n in os.listdir(package) if n.endswith(".py") and n != "__init__.py"}
        missing = {m for m in modules if f"chainbox_guest.{m}" not in sys.modules}
        self.assertEqual(missing, set())


def errno_name(number):
    import errno

    return errno.errorcode[number]


if __name__ == "__main__":
    unittest.main()
