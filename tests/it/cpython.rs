//! The CPython guest: one contract for both guests, and the choice between
//! them. Each `same_on_both_guests!` case runs one script on monty and on
//! CPython against the standard registry and compares everything a caller
//! sees: status, output (key order and int vs float included), output
//! text, stdout, the exception's type and message, the trace and the
//! warnings. The other tests cover the choice: `auto` routes by the scan,
//! falls back from a script monty's parser refuses, never restarts a chain
//! after a tool call, and the result says which interpreter ran.

use std::sync::Arc;

use chainbox::{
    Approval, CallStatus, ChainPolicy, ChainRunResult, ChainStatus, Engine, EngineConfig, ErrorKind, Interpreter,
    PythonChoice, RunOptions, ToolRegistry, ToolRisk,
};
use serde_json::{Value, json};

use crate::fixtures::{
    ChartTool, SleepTool, add_tool, assert_ok, delete_tool, echo_tool, engine, fail_tool, noop_tool, registry,
};

/// The standard tools plus `delete` (high risk: denied under auto-approval
/// of safe calls) and `chart` (an image result, saved in the workspace).
fn tools() -> ToolRegistry {
    ToolRegistry::from_local([
        add_tool(),
        echo_tool(),
        fail_tool(),
        noop_tool(),
        Arc::new(SleepTool),
        delete_tool(),
        Arc::new(ChartTool),
    ])
    .expect("registry")
}

async fn run_on(python: PythonChoice, script: &str, registry: &ToolRegistry) -> ChainRunResult {
    // A short call timeout, so the timeout case ends in seconds.
    let policy = ChainPolicy {
        python,
        max_inline_result_bytes: 256,
        call_timeout_s: 3.0,
        approval_timeout_s: 2.0,
        ..ChainPolicy::default()
    };
    engine()
        .run(script, registry, &policy, &Approval::auto(ToolRisk::Safe))
        .await
}

/// Everything a caller sees that does not depend on timing or on the
/// interpreter's internals (tracebacks, memory, artifact refs are compared
/// by presence).
fn observed(r: &ChainRunResult) -> Value {
    json!({
        "status": r.status,
        "output": r.output,
        "output_text": r.output_text,
        "stdout": r.stdout,
        // A syntax error's message is the parser's own wording.
        "error": r.error.as_ref().map(|e| json!([e.kind, e.error_type, (e.kind != ErrorKind::Compile).then_some(&e.message)])),
        "trace": r.call_trace.iter().map(|c| json!([c.tool, c.status, c.args_digest, c.artifact_ref.is_some()])).collect::<Vec<_>>(),
        "warnings": r.warnings.iter().map(|w| json!([w.message, w.line])).collect::<Vec<_>>(),
        "files": r.files.iter().map(|f| f.path.clone()).collect::<Vec<_>>(),
    })
}

/// Runs `script` on both guests and asserts a caller sees the same thing.
async fn same_on_both(script: &str) -> ChainRunResult {
    let registry = tools();
    let monty = run_on(PythonChoice::Monty, script, &registry).await;
    let cpython = run_on(PythonChoice::Cpython, script, &registry).await;
    assert_eq!(monty.interpreter, Interpreter::Monty);
    assert_eq!(cpython.interpreter, Interpreter::Cpython);
    assert_eq!(
        observed(&monty),
        observed(&cpython),
        "monty: {monty:#?}\ncpython: {cpython:#?}"
    );
    cpython
}

macro_rules! same_on_both_guests {
    ($($name:ident: $script:expr;)*) => {$(
        #[tokio::test(flavor = "multi_thread")]
        async fn $name() {
            same_on_both($script).await;
        }
    )*};
}

same_on_both_guests! {
    the_final_expression_is_the_answer_with_key_order_and_exact_ints:
        "r = await add(a=1, b=2)\n{'z': r, 'a': 2 ** 100, 'm': [1, 2.5, None, True], 't': (1, 'x')}";
    a_string_answer_is_its_own_output_text: "await echo(text='héllo')";
    an_uncaught_module_exception_is_named_by_its_class: "import json\njson.loads('{\"a\": ')";
    no_final_expression_answers_none: "x = await noop()";
    positional_arguments_map_onto_the_schema_order: "await add(2, 3)";
    too_many_positional_arguments_are_a_type_error: "await add(1, 2, 3)";
    a_tool_failure_is_a_runtime_error: "await fail(message='disk full')";
    a_denied_call_is_a_permission_error: "await delete(path='/x')";
    a_rejected_argument_is_a_value_error: "await echo(text=float('nan'))";
    a_call_timeout_is_a_timeout_error:
        "try:\n    await sleep(seconds=120)\nexcept TimeoutError as e:\n    r = 'timed out'\nr";
    caught_tool_errors_keep_their_types:
        "out = []\nfor coro in [fail(message='m'), delete(path='p')]:\n    try:\n        await coro\n    except Exception as e:\n        out.append([type(e).__name__, str(e)])\nout";
    gathered_calls_answer_in_order:
        "import asyncio\nawait asyncio.gather(add(a=1, b=1), echo(text='b'), add(a=2, b=2))";
    print_output_is_stdout_in_order_with_calls:
        "print('before')\nawait noop()\nprint('after', 1, sep='-')\n'done'";
    a_never_awaited_call_warns_and_never_runs: "x = 1\nc = echo(text='never')\n'done'";
    an_unknown_name_is_a_name_error_with_the_tools_hint: "await ecko(text='x')";
    a_syntax_error_is_a_compile_error: "x = (1,\n";
    a_big_result_is_offloaded_to_a_handle: "h = await echo(text='x' * 1000)\nsorted(h)";
    a_handle_loads_back_whole: "h = await echo(text='x' * 1000)\nlen(load_artifact(h))";
    a_big_answer_is_offloaded: "'y' * 1000";
    an_image_result_becomes_a_workspace_file_the_script_can_read:
        "r = await chart()\nimport os\n[sorted(os.listdir('/workspace')) != [], len(open(r['files'][0]['path'], 'rb').read()) if 'files' in r else None]";
    a_handle_passed_as_an_argument_is_resolved:
        "h = await echo(text='z' * 1000)\nr = await echo(text=h)\nlen(r) if isinstance(r, str) else sorted(r)";
    // Found by generated scripts (stop 25); each is a chainbox patch of monty.
    float_sums_are_compensated_as_in_cpython:
        "[sum([1e16, 123456.789, 2.5]), sum([0.1] * 10), sum([1, 2, 0.1, 0.2]), sum([0.1, 0.2], 0.5), sum([2**70, 0.1]), sum([1e308, 1e308, -1e308]), sum([-0.0, -0.0], -0.0)]";
    math_domain_errors_show_the_float_as_python_writes_it:
        "import math\nout = []\nfor f in [math.sqrt, math.log]:\n    try:\n        f(-2.3e20)\n    except ValueError as e:\n        out.append(str(e))\nout";
    an_answer_with_an_int_too_long_to_write_is_a_value_error: "[1, 10 ** 5000]";
    // An answer json.dumps refuses is its repr, written by the VM (a
    // chainbox patch of monty: `CompileOptions::answer_repr`): a class's own
    // `__repr__`, a dict view's, a range's; `output_text` names a Counter.
    a_dict_views_answer_is_its_repr: "d = {'b': 1, 'a': 2}\nd.items()";
    a_range_answer_is_its_repr: "range(2, 10, 3)";
    instances_answer_their_own_repr:
        "class Point:\n    def __init__(self, x):\n        self.x = x\n    def __repr__(self):\n        return f'Point({self.x})'\n[Point(1), Point(2)]";
    a_dataclass_answers_its_fields_and_its_own_repr:
        "from dataclasses import dataclass\n@dataclass\nclass Row:\n    id: int\n    def __repr__(self):\n        return f'<row {self.id}>'\nRow(7)";
    a_counters_answer_text_names_it: "import collections\ncollections.Counter('abca')";
    a_plain_instance_is_no_tool_argument:
        "class K:\n    pass\ntry:\n    await echo(text=K())\nexcept TypeError as e:\n    r = str(e)\nr";
    a_long_str_answer_is_its_own_text: "'line\\n' * 40";
    an_empty_dicts_popitem_error_reads_as_in_cpython:
        "try:\n    {}.popitem()\nexcept KeyError as e:\n    r = [str(e), repr(e)]\nr";
    // CPython 3.13+'s "Did you mean" in an unexpected keyword's message
    // (monty's `suggestions::closest`, a chainbox patch), and the order of
    // CPython's keyword errors around positional-only names.
    unexpected_keywords_get_cpythons_suggestions:
        "import json\nfrom dataclasses import dataclass\ndef total(order, tax_rate=0.0, discount=0.0):\n    return order\ndef make(currency):\n    def fmt(amount, decimals=2):\n        return currency\n    return fmt\nclass Report:\n    def add_line(self, label, *, highlight=False):\n        return label\n@dataclass\nclass Summary:\n    customer_id: str\n    order_count: int = 0\ndef pair(a, b, /, *, sep=', '):\n    return a\ndef loose(a, /, **rest):\n    return sorted(rest)\nout = [loose(1, a=2)]\nfor call in [lambda: total(1, tax_rte=0.2), lambda: total(1, Discount=1), lambda: make('EUR')(1, decimal=1), lambda: Report().add_line('x', higlight=True), lambda: (lambda amount, percent=10: 0)(1, pecrent=5), lambda: Summary('C1', order_cnt=3), lambda: pair(1, 2, a=1), lambda: pair(1, 2, sepp=1, b=2), lambda: total(1, vat=0.2), lambda: total(1, **{'tax rate': 1}), lambda: sorted([2, 1], reversed=True), lambda: json.dumps([], indnet=2), lambda: 'a,b'.split(sepp=','), lambda: print('x', ends=''), lambda: max([1], defualt=0)]:\n    try:\n        call()\n    except TypeError as e:\n        out.append(str(e))\nout";
    // Wrong-typed and miscounted arguments of str, bytes, list and dict
    // methods (chainbox patches of monty), in CPython 3.14's words where
    // 3.11, the corpus's reference, words them otherwise.
    wrong_typed_arguments_read_as_in_cpython:
        "out = []\nfor call in [lambda: 'a b'.find(1), lambda: 'a b'.rfind(None), lambda: 'a b'.count(1.5), lambda: 'a b'.index(1, 0), lambda: 'a b'.rindex([]), lambda: 'a b'.find(), lambda: 'a b'.count('a', 1, 2, 3), lambda: 'a b'.split(1), lambda: 'a b'.strip(1), lambda: 'a b'.replace(1, 'x'), lambda: 'a b'.partition(None), lambda: 'a b'.center(5, 1), lambda: 'a b'.center(5, 'ab'), lambda: 'a b'.removeprefix(None), lambda: 'a b'.removesuffix(prefix='a'), lambda: 'a b'.startswith(('a', 1)), lambda: 'a b'.endswith(('z', 1)), lambda: dict([1, 2]), lambda: dict(['ab', 5]), lambda: {}.update([5]), lambda: {}.get(), lambda: [1].index(), lambda: [1].pop(1, 2), lambda: [1].insert(index=1), lambda: b'a b'.find('a'), lambda: b'a b'.find(300), lambda: b'a b'.find(32), lambda: b'a b'.split(1), lambda: b'a b'.strip(1, 2), lambda: b'a b'.center(5, b'ab'), lambda: b'a b'.ljust(5, None), lambda: b'a b'.startswith((b'a', 1)), lambda: b'a b'.endswith((b'z', 'b')), lambda: b'a b'.replace(b'a'), lambda: b'a b' + 'x', lambda: ord(b'a'), lambda: ord(b'ab')]:\n    try:\n        out.append(repr(call()))\n    except Exception as e:\n        out.append(type(e).__name__ + ': ' + str(e))\nout";
    // The callee a call's lone `*x` or `**x` was for, as CPython names it
    // (monty's `callee_display`, a chainbox patch): builtins bare, a
    // script's functions under `__main__`, a module's under its module, a
    // tool bare on both guests; any other `*x` says "Value after *".
    spread_argument_errors_name_the_callee:
        "import json\nimport math\ndef total(*values, **options):\n    return 0\nclass Ledger:\n    def add(self, *amounts):\n        return 0\nout = []\nfor call in [lambda: print(*None), lambda: total(*5), lambda: Ledger().add(*2.5), lambda: (lambda *a: a)(*5), lambda: echo(*5), lambda: echo(**[1]), lambda: json.dumps(**5), lambda: math.sqrt(*5), lambda: total(a=1, **{'a': 2}), lambda: [1].sort(**5), lambda: dict(**5), lambda: total(1, *7), lambda: [*7]]:\n    try:\n        call()\n    except TypeError as e:\n        out.append(str(e))\nout";
    // Sequences order by their first items that are not `==` (identity
    // first: every NaN of one `json.loads` is the same object, as is
    // `math.nan`), by the operator itself, which names the items' types.
    sequences_order_by_their_first_unequal_items:
        "import json\nimport math\nx, y = json.loads('[NaN, NaN]')\nout = [(x, 1) < (y, 2), [math.nan, 1] <= [math.nan, 0], sorted([(x, 2), (y, 1)]), max([[x, 1], [y, 3]]), (None, 1) < (None, 2), [1, [2, x]] < [1, [2, y], 0]]\nfor call in [lambda: [1, 'a'] < ['a', 1], lambda: [[1, None]] >= [[1, 2]], lambda: max([(2, 'b'), (2, None)]), lambda: sorted([(1, 2), (1, 'x')])]:\n    try:\n        call()\n    except TypeError as e:\n        out.append(str(e))\nout";
    // CPython 3.13+'s `count_run` (a descending run keeps equal items in
    // order): which comparison fails first, and the order a failed sort
    // leaves, differ from 3.11's, the corpus's reference.
    // `fromisoformat` with CPython's own grammar (monty's `isoformat`, a
    // chainbox patch), where 3.14 reads otherwise than 3.11, the corpus's
    // reference: `24:00` is the next midnight, a fraction on the hour or a
    // fourth field is refused, and the constructors' errors name the field.
    isoformat_strings_read_as_in_cpython:
        "from datetime import date, datetime, time\nout = []\nfor call in [lambda: datetime.fromisoformat('2024-12-31T24:00'), lambda: datetime.fromisoformat('2024-02-28 24:00:00+01'), lambda: time.fromisoformat('24:00Z'), lambda: datetime.fromisoformat('2024-03-07T24:00:01'), lambda: datetime.fromisoformat('2024-03-07T10.5'), lambda: datetime.fromisoformat('2024-03-07T10:30:15:00'), lambda: date.fromisoformat('2024-02-30'), lambda: datetime.fromisoformat('0000-01-01'), lambda: datetime.fromisoformat('2023-02-29T25:00'), lambda: datetime.fromisoformat('2024-03-07T10:30+24:00'), lambda: time.fromisoformat('10:61'), lambda: date.fromisoformat('2024-W54-1')]:\n    try:\n        out.append(repr(call()))\n    except ValueError as e:\n        out.append(str(e))\nout";
    // Date errors in 3.14's words (3.11 says \"day is out of range for
    // month\"): `strptime` past a month's end, and `datetime()` checking
    // the date before the time; `timedelta / 0.0`.
    date_errors_read_as_in_cpython:
        "from datetime import datetime, timedelta\nout = []\nfor call in [lambda: datetime.strptime('2024-02-30', '%Y-%m-%d'), lambda: datetime.strptime('31/04/24', '%d/%m/%y'), lambda: datetime(2023, 2, 29, 25), lambda: timedelta(hours=1) / 0.0]:\n    try:\n        call()\n    except (ValueError, ZeroDivisionError) as e:\n        out.append(str(e))\nout";
    // `math.nextafter(x, y, steps=n)` (CPython 3.12+; a chainbox patch of
    // monty, which took no keywords).
    nextafter_takes_steps_as_in_cpython:
        "import math\nout = [math.nextafter(0.0, 1.0, steps=3), math.nextafter(1.0, -1.0, steps=5), math.nextafter(1e300, 100.0, steps=2**64), math.nextafter(5e-324, -5e-324, steps=2), math.nextafter(1.0, 2.0, steps=0)]\nfor bad in [-1, 1.5]:\n    try:\n        math.nextafter(1.0, 2.0, steps=bad)\n    except (ValueError, TypeError) as e:\n        out.append(str(e))\nout";
    // `fold` errors in 3.14's words (3.11 leaves the value off): a datetime
    // stores its fold now (a chainbox patch; monty dropped it), checked after
    // the date; `object()` refuses arguments.
    fold_and_object_errors_read_as_in_cpython:
        "from datetime import datetime\nout = []\nfor call in [lambda: datetime(2020, 1, 1, fold=2), lambda: datetime(2020, 1, 1).replace(fold=-1), lambda: datetime(2020, 13, 1, fold=2), lambda: object(1), lambda: object(x=1)]:\n    try:\n        call()\n    except (ValueError, TypeError) as e:\n        out.append(str(e))\nout";
    // `hashlib.pbkdf2_hmac` on the CPython guest, a build without OpenSSL
    // (`_pbkdf2_hmac` in its module), as monty's and CPython's, errors included.
    pbkdf2_hmac_derives_the_same_keys_on_both_guests:
        "import hashlib\nout = [hashlib.pbkdf2_hmac('sha256', b'password', b'salt', 1000).hex(), hashlib.pbkdf2_hmac('sha1', b'p', b's', 2, 50).hex(), hashlib.pbkdf2_hmac('sha512', 'pw'.encode(), b'na', 3, dklen=7).hex()]\nfor bad in [lambda: hashlib.pbkdf2_hmac('sha256', 'pw', b's', 1), lambda: hashlib.pbkdf2_hmac('nope', b'p', b's', 1), lambda: hashlib.pbkdf2_hmac('sha256', b'p', b's', 0), lambda: hashlib.pbkdf2_hmac('sha256', b'p', b's', 1, 0), lambda: hashlib.pbkdf2_hmac('sha256', b'p', b's', 1.5)]:\n    try:\n        bad()\n    except TypeError as e:\n        out.append(['TypeError', str(e)])\n    except ValueError as e:\n        out.append(['ValueError', str(e)])\nout";
    // The empty str and bytes hash to 0 whatever the seed (so a set holding
    // `''` and ints has CPython's order), and `math.perm(n, None)` is `n!`.
    empty_strings_hash_to_zero_and_perm_takes_none:
        "import math\nd = {'': 1, b'': 2}\n[hash(''), hash(b''), d[''], d[b''], '' in {'', 'a'}, list({'', 0, 8, 16}), list(set([16, '', 8, 0])), math.perm(5, None), math.perm(4, 2)]";
    // `math.ldexp` refuses a non-int exponent in CPython's words.
    ldexp_refuses_a_non_int_exponent_in_cpythons_words:
        "import math\nout = []\nfor e in [1.5, '2', None, 2**70, True, 3]:\n    try:\n        out.append(math.ldexp(1.0, e))\n    except (TypeError, OverflowError) as err:\n        out.append(type(err).__name__ + ': ' + str(err))\nout";
    // A format code outside printable ASCII reads `\xe9` in the error, as
    // CPython's `unknown_presentation_type` writes it (monty wrote `é`).
    format_codes_outside_ascii_read_as_hex_escapes:
        "out = []\nfor spec in ['0.0\\u00e9', '12,.10\\u00e9', ' _.0\\u00e9', 'x', '\\x7f', '\\x01']:\n    try:\n        format(1.5, spec)\n    except ValueError as e:\n        out.append(str(e))\nfor spec in ['\\u00e9', 'q']:\n    try:\n        format('s', spec)\n    except ValueError as e:\n        out.append(str(e))\nout";
    // `itertools.count` counts in a C integer only when the step is 1, so
    // `count(True)` gives 1, 2, … and `count(True, 2)` True, 3, … (monty
    // widened every bool start).
    count_keeps_a_bool_start_unless_the_step_is_one:
        "import itertools\nfrom itertools import islice\n[list(islice(itertools.count(True), 3)), list(islice(itertools.count(True, 2), 3)), repr(itertools.count(True)), repr(itertools.count(True, 2)), list(islice(itertools.count(False, 0.5), 3)), list(islice(itertools.count(2, True), 2))]";
    // `hash()` is 64-bit CPython's on both guests: monty computes CPython's
    // hashes, the CPython guest (a wasm32 build) replaces `builtins.hash`.
    hash_is_64_bit_cpythons_on_both_guests:
        "from decimal import Decimal\nfrom datetime import timedelta\nfrom dataclasses import dataclass\n@dataclass(frozen=True)\nclass Key:\n    a: int\n    b: tuple\nclass Big:\n    def __hash__(self):\n        return 2**70\n[hash(2**40), hash(-2**70), hash(2**61 - 1), hash(1.5), hash(-0.1), hash(1e300), hash((1, 2)), hash(((1, 2), 3.5, None)), hash(None), hash(frozenset({1, 2, (3, 4)})), hash(range(1, 10, 3)), hash(range(0)), hash(1 + 2j), hash(Decimal('1.5')), hash(Decimal('-7.25e-5')), hash(timedelta(1, 5)), hash(Key(1, (2, 3))), hash(Big()), hash(True), hash(float('inf'))]";
    // A set display of constants orders as CPython 3.14's (a frozenset
    // constant merged into an empty set; 3.11, the corpus's reference,
    // rebuilt the constant from its own order), and sets of small ints
    // iterate, pop and combine alike on both guests (the CPython guest's
    // 32-bit hashes agree with 64-bit ones for these). An operation on
    // constants is a constant when CPython's optimizer folds it (`2**31`,
    // `24 * 3600`; not `10**40`, over its 128-bit limit, nor `1 / 0`).
    constant_set_displays_order_as_cpython_3_14:
        "a = {1, 2, 3, 40, 50}\nb = {3, 40, 99, 1000}\ns = set(range(0, 90, 7))\ns -= {14, 21}\npopped = [s.pop(), s.pop()]\nfolded = [list({1, -17, 2**31, 42, -1}), list({60, 60 * 60, 24 * 60 * 60, 7 * 24 * 3600}), list({1 << 20, 1 << 30, 1 << 10, -(1 << 40)}), list({2**64, 2**65, 3, -2**63}), list({10**40, 1, 2, 3, 2**40}), list({~5, 5 ^ 3, 6 | 9, True + 1, 2**31 >> 3, 7 // 2, -7 % 3}), list({(1, 2) * 3, (4,) + (5,), 100 - 1000, 2**127 + 1})]\ntry:\n    {1, 2, 1 / 0}\nexcept ZeroDivisionError as e:\n    folded.append(str(e))\n[list(a | b), list(b | a), list(b ^ a), list(b), [x for x in {3, 40, 99, 1000}], list({16, 1, 2, 3, 4}), popped, list(s), folded]";
    // `sys.maxsize` is 64-bit CPython's on both guests (the CPython guest is
    // a wasm32 build, whose own is 2**31 - 1, below a millisecond timestamp).
    maxsize_is_64_bit_on_both_guests:
        "import sys\nbest = sys.maxsize\nfor ts in [1733356800000, 1733443200000]:\n    best = min(best, ts)\n[best, sys.maxsize, sys.maxsize == 2**63 - 1]";
    // The working directory is the workspace on both guests: monty's was
    // `/`, where nothing is mounted, so `open('out.csv', 'w')` was a
    // PermissionError there and wrote the workspace on CPython.
    relative_paths_resolve_in_the_workspace_on_both_guests:
        "import os\nfrom pathlib import Path\nwith open('rel.txt', 'w') as f:\n    f.write('x')\nPath('sub').mkdir()\nPath('sub/n.txt').write_text('y')\n[os.getcwd(), os.path.exists('/workspace/rel.txt'), os.path.abspath('a'), str(Path.cwd()), str(Path('b').absolute()), open('rel.txt').read(), sorted(os.listdir('.')), os.path.relpath('.', '/workspace/data.csv'), Path('/workspace/sub/n.txt').read_text()]";
    // Paths sort as CPython 3.14's (their strings split at `/`; the corpus's
    // 3.11 compares parts) and refuse a bad name, stem or suffix in 3.14's
    // words (chainbox patches of monty's `Path`, which could not sort and
    // added a missing dot to a suffix).
    pure_paths_sort_and_refuse_as_cpython_3_14:
        "from pathlib import Path\nps = [Path('a'), Path('/srv/x'), Path('//srv/x'), Path(''), Path('..'), Path('/'), Path('a/b'), Path('a b'), Path('a-b')]\nout = [[str(p) for p in sorted(ps)], Path('name.').suffix, Path('name.').suffixes, Path('x.tar.gz.').suffixes]\nfor bad in [lambda: Path('/').with_name('x'), lambda: Path('a').with_suffix('md'), lambda: Path('a').with_name('b/c'), lambda: Path('a').with_name(''), lambda: Path('.').with_stem('s'), lambda: Path('a.txt').with_stem(''), lambda: Path('a.txt').with_suffix('.a/b')]:\n    try:\n        bad()\n    except ValueError as e:\n        out.append(str(e))\nout";
    // Floats from the C math library are the host's on both guests (its C
    // library is the one native CPython there calls; wasi-libc's musl code
    // differs in the last place for these arguments), including values the
    // guests' `random`, `math.log` and CPython's own `gamma`/`lgamma`
    // compute from it, and a log of an int too large for a float.
    c_math_is_the_hosts_on_both_guests:
        "import math, random\nrandom.seed(2024)\nprint([math.sin(6.9), math.cos(8.3), math.tan(-1.875), math.exp(3.625), math.log10(5.5998), math.atan(11.528221802513713), math.sinh(-80.21631754709853), math.cosh(0.4), math.tanh(0.8336162769503781), math.asin(0.9676847689684203), math.acos(0.12599321742185587), math.cbrt(3.375), math.erf(-0.75), math.erfc(0.8605125076107687), math.atanh(0.31730376794371284), math.atan2(3.625, 3.125), math.log(10**400, 7), math.log2(3**1000), math.log10(7**999), math.log(5.5998), math.pow(1.0123, 77.5), math.expm1(0.3), math.log1p(0.7), math.exp2(0.3), math.asinh(2.5), math.acosh(2.5), math.gamma(-9.7236), math.lgamma(-9.7236), math.gamma(-250.5), math.lgamma(0.5), random.gauss(0, 1), random.vonmisesvariate(1, 2), random.gammavariate(2.5, 1), random.expovariate(1.5), random.binomialvariate(200, 0.4)])";
    // Floats in an answer are spelled as `json.dumps` spells them (`1e-06`,
    // `1e+20`; monty's guest wrote `1e-6`), inline and offloaded alike: the
    // offloaded answer's bytes, so its artifact ref, are the same.
    floats_in_an_answer_are_spelled_as_json_dumps_spells_them:
        "small = [1e-6, 1e20, 2.16e-06, 0.1, -0.0, 1e16, 2.0]\n[small, small * 10]";
    // 3.14's words for math's argument errors (the corpus's 3.11 has the
    // module-less `log() takes no keyword arguments`).
    math_argument_errors_read_as_in_cpython_3_14:
        "import math\nout = []\nfor f in [lambda: math.isclose(1, 2, 3, 4), lambda: math.isclose(1), lambda: math.isclose(1, 2, tol=3), lambda: math.log(1, 2, k=3), lambda: math.log(), lambda: math.log(1, 2, 3)]:\n    try:\n        f()\n    except TypeError as e:\n        out.append(str(e))\nout";
    // A float seed seeds as on 64-bit CPython (by its 64-bit hash) on the
    // CPython guest too, a 32-bit build (`_seed_as_64_bit` in its module).
    float_seeds_give_64_bit_cpythons_numbers:
        "import random\nout = []\nfor seed in [3.5, -0.0, 0.1, -2.75, 1e300, float('inf'), 2.0, True, 7]:\n    random.seed(seed)\n    out.append((random.random(), random.Random(seed).randint(1, 100)))\nout";
    // `s |= t` and friends update the set itself on monty too (a chainbox
    // patch; monty rebound the name), as in the corpus's `set_updates_in_place`.
    sets_update_in_place_on_both_guests:
        "def collect(acc, items):\n    acc |= set(items)\n\n\nseen = set()\ncollect(seen, [3, 1, 3])\nalias = seen\nseen -= {3}\nseen ^= {5, 1}\nseen &= {5, 7}\ngroups = {\"a\": set()}\nbucket = groups[\"a\"]\nbucket |= {2}\nkeys = {1}\nkeys_alias = keys\nkeys |= {\"x\": 0}.keys()\n[sorted(alias), alias is seen, sorted(groups[\"a\"]), sorted(keys_alias), len(keys)]";
    // Sets order their members by the interpreter's own hashes: the CPython
    // guest (a 32-bit build) has 64-bit CPython's numeric hashes spliced in
    // (guest/cpython/hashes), so sets of tuples, floats, big ints, complexes
    // and decimals list in monty's (and 64-bit CPython's) order, and equal
    // numbers of each type still find each other. Negative hashes probe as
    // 64-bit ones (`{-1, -2}`: both hash to -2) and -1.5's, whose low half is
    // the error value -1, keeps its slot. A `__hash__` written in Python
    // that returns a 64-bit value (`hash((self.x, self.y))`) puts its object
    // where 64-bit CPython does. A tuple holding an unhashable item is a
    // TypeError.
    sets_order_numbers_and_tuples_as_64_bit_cpython:
        "from decimal import Decimal\ncells = {(r, c) for r in range(6) for c in range(5) if (r * c) % 3}\nfloats = {0.1, 1.5, 2.25, -7.125, 1e300, 5e-324, float('inf')}\nbig = {10**12 + i * 3600_000 for i in range(8)} | {-2**63, 2**64 + 1}\nmixed = {(0.5, 1.5), (10**10, 2), ((1, 2), 2.75), (complex(1, 2),), Decimal('1.5'), Decimal(10**12) + 1}\nfound = [10**12 in {Decimal(10**12)}, 1.5 in {Decimal('1.5')}, Decimal('0.5') in {0.5}, 2**40 in {float(2**40)}, complex(2.5, 0) in {2.5}]\nnegative = [set([-1, -2]), set([-1, -2, 0, 8, 64, 1024]), set([-1.5, -2.5, -0.5, -1.25]), set([(-1, -2), (-2, -1)])]\nclass P:\n    def __init__(self, x, y):\n        self.x, self.y = x, y\n    def __hash__(self):\n        return hash((self.x, self.y))\n    def __eq__(self, other):\n        return (self.x, self.y) == (other.x, other.y)\n    def __repr__(self):\n        return f'P({self.x}, {self.y})'\nnegative.append(set(P(i % 5, i // 5) for i in range(12)))\nerrors = []\nfor bad in [lambda: {([1], 2)}, lambda: {(1.5, [2])}, lambda: {(2**40, (1, [2]))}]:\n    try:\n        bad()\n    except TypeError as e:\n        errors.append(str(e))\nnegative.append(errors)\n[repr(cells), repr(floats), repr(big), repr(mixed), found, sorted(hash(x) for x in mixed if not isinstance(x, complex)), repr(negative)]";
    // Frozensets hash as 64-bit CPython's on the CPython guest too
    // (`frozenset_hash` spliced in, and its copies inlined where a set is
    // looked up as a frozenset), so sets and dicts of them (undirected edges)
    // list in monty's order; a set is looked up as the frozenset of its
    // members (`{1, 2} in edges`, `s.remove({1})`; monty raised TypeError),
    // and a range's index past i64 is out of range.
    frozensets_order_and_look_up_as_64_bit_cpython:
        "edges = {frozenset(e) for e in [(1, 2), (2, 1), (3, 4), (2, 3), (5, -1), (10**12, 7), (0.5, 2)]}\nnested = {frozenset([frozenset([1, 2]), 3]), frozenset([frozenset()]), frozenset([(1, 2), -5])}\nnames = {frozenset([1, 2]): 'a', frozenset([2, 3]): 'b', frozenset(): 'c', frozenset([-1]): 'd'}\ns = {frozenset([1]), frozenset([2, 3])}\ns.discard({2, 3})\nout = [repr(edges), repr(nested), list(names), {1, 2} in edges, {9} in edges, set() in {frozenset()}, {1} in set(), names[frozenset([2, 1])], repr(s), repr({(frozenset([1]), 2), (frozenset([3]), 4), (frozenset(), 0)})]\nfor bad in [lambda: s.remove({7}), lambda: range(10)[-10**20], lambda: range(10)[2**64]]:\n    try:\n        bad()\n    except (KeyError, IndexError) as e:\n        out.append(type(e).__name__ + ': ' + str(e))\nout";
    a_failed_sort_stops_where_cpython_3_14_does:
        "out = []\nfor xs in [[5, 5, 4, None], [3, 2, 2, 1, 0.5, None], [4, 4, 4, 3, 'x', 2], [2.5, 2.5, 1, None, 0]]:\n    try:\n        xs.sort()\n        out.append(xs)\n    except TypeError as e:\n        out.append([str(e), xs])\nout";
    // CPython 3.12+ bounds walks over nested data by its C stack, not by the
    // 1,000-frame recursion limit (the corpus's CPython 3.11 does not, so
    // these live here): monty wrote `...` at depth 1,000 and raised
    // RecursionError comparing 1,000-deep lists.
    data_nested_2500_deep_is_walked_as_in_cpython_3_14:
        "import json\nx, y, t, d = [], [], (), {}\nfor i in range(2500):\n    x, y, t, d = [x], [y], (t,), {'k': d}\n[len(repr(x)), repr(x).count('...'), x == y, x < y, hash(t) == hash(t[0]), len(json.dumps(d)), len(repr(json.loads(json.dumps(x)))), len(str(t)), str(d).count('...'), len(f'{d}'), isinstance(1, t)]";
    a_deeply_nested_answer_is_written_whole:
        "x = []\nfor i in range(3000):\n    x = [x]\nx";
    user_reprs_recurse_through_nested_objects_as_in_cpython:
        "class N:\n    def __init__(self, c): self.c = c\n    def __repr__(self): return f'N({self.c!r})'\n    def __eq__(self, o): return self.c == o.c\n    def __hash__(self): return hash(tuple(self.c))\nx = y = None\nfor i in range(150):\n    x, y = N([x]), N([y])\n[repr(x)[:12], len(repr(x)), x == y, hash(x) == hash(y), len(str([x, {'k': x}]))]";
    // CPython 3.12+ (the corpus runs 3.11, which says MemoryError).
    shifts_by_counts_past_int64_read_as_in_cpython:
        "out = []\nfor a, b in [(1, 2**64), (0, 2**64), (-5, 2**70), (2**70, 2**64), (-(2**70), 2**64), (0, 10**30), (3, 10**20 + 1)]:\n    for f in (lambda: a << b, lambda: a >> b):\n        try:\n            out.append(f())\n        except OverflowError as e:\n            out.append(str(e))\nout";
    self_referential_comparisons_raise_recursion_error:
        "a, b = {}, {}\na['x'], b['x'] = a, b\ntry:\n    a == b\n    r = 'equal'\nexcept RecursionError:\n    r = 'RecursionError'\nr";
    // CPython's `str(e)` has no "Did you forget to import" (its traceback does).
    a_name_error_for_a_module_never_imported_reads_as_in_cpython:
        "try:\n    json.dumps({})\nexcept NameError as e:\n    r = str(e)\nr";
    an_uncaught_name_error_for_a_module_never_imported_reports_cpythons_message: "asyncio.sleep(0)";
    // int and float methods where CPython 3.14 differs from the corpus's
    // 3.11: `int.is_integer` (3.12+), the clinic's unexpected-keyword
    // wording, and `no __dict__` in a failed attribute write.
    int_and_float_methods_as_in_cpython_3_14:
        "def attempt(f):\n    try:\n        return f()\n    except Exception as e:\n        return [type(e).__name__, str(e)]\nx = 5\n[(7).is_integer(), (2**80).is_integer(), True.is_integer(), attempt(lambda: (5).is_integer(1)), attempt(lambda: x.to_bytes(foo=1)), attempt(lambda: int.from_bytes(b'a', foo=1)), attempt(lambda: bool.from_bytes(foo=1)), attempt(lambda: x.to_bytes(1, 5, foo=1)), attempt(lambda: x.to_bytes(1, length=1, foo=2)), attempt(lambda: setattr(x, 'foo', 1)), attempt(lambda: setattr(1.5, 'numerator', 1)), (2.5).is_integer()]";
    an_uncaught_int_method_error_reports_cpythons_message: "(300).to_bytes(1, 'big')";
    // 3.12+'s `PurePath.match` (a chainbox patch of monty): `case_sensitive`,
    // a path pattern, and wildcards that never match the root (3.11's did).
    path_match_as_in_cpython_3_14:
        "from pathlib import Path\nout = []\nfor path, pattern, cs in [('/', '*', None), ('/a', '/*', None), ('/', '[!a]', None), ('//a', '/a', None), ('A/B.TXT', 'a/*.txt', False), ('A/B.TXT', 'a/*.txt', None), ('a/b', Path('*'), None), ('a', '**', None), ('a/b', '**', None), ('a', '', None)]:\n    try:\n        out.append(Path(path).match(pattern, case_sensitive=cs))\n    except ValueError as e:\n        out.append(str(e))\nout";
    // `strptime` as CPython 3.14's `_strptime` (a chainbox patch of monty):
    // its expression (`%H` may be ` 7`), the ISO directives' checks, `%z`'s
    // colons, `%Z` naming the zone, and the date's and time's errors.
    strptime_reads_as_in_cpython_3_14:
        "from datetime import datetime\nout = []\nfor s, f in [(' 7:05', '%H:%M'), ('0000-01-05', '%Y-%m-%d'), ('2024 53 4', '%G %V %u'), ('2023 53 4', '%G %V %u'), ('2024 10', '%G %V'), ('2024 10 1', '%Y %V %u'), ('2024 10 1 5', '%Y %G %V %u'), ('2024 5 100', '%G %V %j'), ('02-29', '%m-%d'), ('23:59:60', '%H:%M:%S'), ('10:00 +05:30:15', '%H:%M %z'), ('10:00 +053015', '%H:%M %z'), ('10:00 +05:3015', '%H:%M %z'), ('10:00 +2400', '%H:%M %z'), ('10:00 +0100 UTC', '%H:%M %z %Z'), ('10:00 UTC', '%H:%M %Z'), ('2024-02-30', '%Y-%m-%d'), ('0000 1 1', '%Y %W %w')]:\n    try:\n        out.append(repr(datetime.strptime(s, f)))\n    except ValueError as e:\n        out.append(str(e))\nout";
    // A non-path to `PurePath(...)`, `joinpath` or `match` is refused in
    // CPython 3.12+'s words (3.11 says "expected str, bytes or os.PathLike").
    non_paths_are_refused_as_in_cpython_3_14:
        "from pathlib import Path\nout = []\nfor call in [lambda: Path(1), lambda: Path('a', None), lambda: Path('a').joinpath(b'x'), lambda: Path('a').match(2.5)]:\n    try:\n        call()\n    except TypeError as e:\n        out.append(str(e))\nout";
    // `gmtime()`'s zone is `GMT`, as glibc's CPython says (wasi-libc's and
    // upstream monty's said `UTC`).
    gmtime_names_its_zone_gmt:
        "import time\nst = time.gmtime(0)\n[st.tm_zone, st.tm_gmtoff, time.strftime('%Z %z', st), time.gmtime(86400)[:3]]";
    // glibc's `%k`, `%l` and `%P` (the CPython guest's C library, musl,
    // wrote an empty string for a whole format holding one), through
    // `datetime.strftime` and `time.strftime`.
    strftime_writes_glibcs_hour_directives:
        "import time\nfrom datetime import datetime\nout = [datetime(2024, 3, 5, h, 7).strftime(f) for h in (0, 9, 12, 14) for f in ['%k', '%l', '%P', '%I:%M %P', 'at %k:%M', '%%k %d']]\nout.append(time.strftime('%k|%l|%P|%H', (2024, 3, 5, 21, 7, 9, 1, 65, -1)))\nout";
    // Arity errors of methods count `self`, the CPython guest's patched
    // `Random.seed` included (it said `_seed_as_64_bit()`).
    method_arity_errors_name_and_count_as_in_cpython:
        "import random\nfrom datetime import timedelta\nout = [str(timedelta(1, 2, 3, 4, 5, 6, 7))]\nfor call in [lambda: random.seed(1, 2, 3), lambda: random.Random().seed(1, 2, 3), lambda: random.choice([1], 2), lambda: timedelta(*range(8)), lambda: timedelta(1, days=1)]:\n    try:\n        call()\n    except TypeError as e:\n        out.append(str(e))\nout";
}

/// What a traceback says of where an exception came from: the error's
/// line, each `File "main.py", line N, in NAME` frame, and its last line
/// (the carets under a line are each interpreter's own).
fn raised_at(r: &ChainRunResult) -> (Option<u32>, Vec<String>, String) {
    let error = r.error.as_ref().expect("the chain fails");
    let traceback = error.traceback.as_deref().unwrap_or_default().trim_end();
    let frames = traceback
        .lines()
        .filter(|l| l.trim_start().starts_with("File \"main.py\""))
        .map(|l| l.trim().to_string())
        .collect();
    let last = traceback.lines().last().unwrap_or_default().to_string();
    (error.line, frames, last)
}

/// An exception that passes an `except` that does not match it, a
/// `finally`, a `with` block or a bare `raise` is reported where it was
/// raised, with the frames it passed, on both guests (monty reported the
/// handler's line); a gathered child's failure shows the `await` that
/// gathered it above the child's frames; a KeyError's last line is the
/// key's repr, a JSONDecodeError's names `json.decoder`.
#[tokio::test(flavor = "multi_thread")]
async fn a_reraised_exception_is_reported_where_it_was_raised() {
    let registry = tools();
    for script in [
        "d = {}\ntry:\n    x = d['k'] + 1\nexcept ValueError:\n    x = 2\nx",
        "d = {}\ntry:\n    x = d['k']\nexcept ValueError:\n    pass\nfinally:\n    y = 1\n",
        "def f():\n    try:\n        return {}['k']\n    except ValueError:\n        return 2\n\n\nf()\n",
        "try:\n    x = 1 / 0\nexcept ZeroDivisionError as e:\n    print('failed:', e)\n    raise\n",
        "def inner(n):\n    return [1][n]\n\n\ndef outer():\n    try:\n        return inner(5)\n    except KeyError:\n        return None\n\n\nouter()\n",
        "from pathlib import Path\ntry:\n    with open('notes.txt', 'w') as f:\n        f.write(1)\nexcept KeyError:\n    pass\n",
        "d = {'a': 1}\nd['b']\n",
        "import asyncio\n\n\nasync def total(n):\n    r = await add(a=n, b=1)\n    return r['missing']\n\n\nawait asyncio.gather(total(1), total(2))\n",
        "import json\njson.loads('{bad')\n",
    ] {
        let monty = run_on(PythonChoice::Monty, script, &registry).await;
        let cpython = run_on(PythonChoice::Cpython, script, &registry).await;
        assert_eq!(raised_at(&monty), raised_at(&cpython), "{script}");
    }
}

/// A call the script stops waiting for (`asyncio.wait_for`'s timeout, a
/// cancelled task) is stopped on the host, as cancelling a task cancels its
/// I/O in CPython: its tool never finishes (no side effect after the
/// timeout), and its record ends at the cancellation as `error`, saying so,
/// while the chain goes on (it used to run on until the chain ended).
#[tokio::test(flavor = "multi_thread")]
async fn a_call_the_script_stops_waiting_for_is_stopped() {
    let finished = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = finished.clone();
    let slow = crate::fixtures::FnTool {
        delay: std::time::Duration::from_millis(800),
        ..crate::fixtures::tool("slow_write", &["text"], move |_| {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok(json!("written"))
        })
    };
    let registry =
        ToolRegistry::from_local([Arc::new(slow) as Arc<dyn chainbox::Tool>, echo_tool()]).expect("registry");
    let script = "import asyncio\ntry:\n    await asyncio.wait_for(slow_write('a'), 0.1)\n    r = 'finished'\nexcept TimeoutError:\n    r = 'timed out'\nt = asyncio.create_task(slow_write('b'))\nawait asyncio.sleep(0.05)\nt.cancel()\nawait asyncio.sleep(1.2)\n[r, await echo('after')]";
    let r = run_on(PythonChoice::Cpython, script, &registry).await;
    assert_ok(&r);
    assert_eq!(r.output, json!(["timed out", "after"]));
    assert!(
        !finished.load(std::sync::atomic::Ordering::SeqCst),
        "a cancelled call's tool ran to its end"
    );
    let cancelled: Vec<_> = r.call_trace.iter().filter(|c| c.tool == "slow_write").collect();
    assert_eq!(cancelled.len(), 2, "{:#?}", r.call_trace);
    for call in cancelled {
        assert_eq!(call.status, CallStatus::Error);
        assert_eq!(
            call.error.as_deref(),
            Some("cancelled: the script stopped waiting for it")
        );
        assert!(call.duration_ms < 600.0, "ended at the cancellation: {call:?}");
    }
}

/// The public attributes of each builtin type, and whether each is
/// callable, as CPython lists them.
const BUILTIN_ATTRIBUTES: &str = "import json\nimport re\nimport datetime\nimport collections\nimport decimal\nimport pathlib\nsamples = {'str': \"'a'\", 'int': '1', 'float': '1.5', 'bool': 'True', 'list': '[1]', 'dict': \"{'a': 1}\", 'set': '{1}', 'frozenset': 'frozenset({1})', 'tuple': '(1,)', 'bytes': \"b'a'\", 'complex': '1j', 'range': 'range(3)', 'slice': 'slice(1, 5, 2)', 're.Pattern': \"re.compile('(a)')\", 're.Match': \"re.match('(a)', 'a')\", 'datetime.date': 'datetime.date(2024, 1, 2)', 'datetime.datetime': 'datetime.datetime(2024, 1, 2, 3, 4)', 'datetime.time': 'datetime.time(3, 4)', 'datetime.timedelta': 'datetime.timedelta(1)', 'datetime.timezone': 'datetime.timezone.utc', 'collections.Counter': \"collections.Counter('ab')\", 'collections.defaultdict': 'collections.defaultdict(int)', 'collections.deque': 'collections.deque([1])', 'decimal.Decimal': \"decimal.Decimal('1.5')\", 'pathlib.Path': \"pathlib.Path('a/b.txt')\", 'TextIOWrapper': \"open('probe.txt', 'w')\"}\nprint(json.dumps([[t, lit, [[n, callable(getattr(eval(lit), n))] for n in sorted(dir(eval(lit))) if not n.startswith('_') and not ('.' in t and getattr(getattr(type(eval(lit)), n), '__self__', None) is type(eval(lit)))]] for t, lit in samples.items()]))";

/// The scan's encoding table is what monty has: every name in
/// `MONTY_ENCODINGS` encodes and decodes on monty (a name listed but missing
/// would be monty's LookupError where CPython answers), and one CPython has
/// that is not listed is monty's LookupError (the rule's reason to exist).
#[tokio::test(flavor = "multi_thread")]
async fn the_scans_encodings_are_what_monty_has() {
    let names = serde_json::to_string(chainbox::python_choice::MONTY_ENCODINGS).expect("names as JSON");
    let probe = format!(
        "import json\nout = []\nfor name in json.loads({names:?}) + ['cp1252']:\n    try:\n        out.append([name, 'a'.encode(name).decode(name) == 'a'])\n    except LookupError:\n        out.append([name, False])\nprint(json.dumps(out))\n"
    );
    let probed = run_on(PythonChoice::Monty, &probe, &registry()).await;
    assert_ok(&probed);
    let probed: Vec<(String, bool)> = serde_json::from_str(probed.stdout.trim()).expect("the probe is JSON");
    let missing: Vec<&str> = probed
        .iter()
        .filter(|(name, ok)| !ok && name != "cp1252")
        .map(|(name, _)| name.as_str())
        .collect();
    assert!(
        missing.is_empty(),
        "MONTY_ENCODINGS lists encodings monty lacks: {missing:?}"
    );
    assert!(
        probed.iter().any(|(name, ok)| name == "cp1252" && !ok),
        "monty has cp1252 now: the encoding rule can let it through"
    );
}

/// A builtin type's name, a literal of it, and its public attributes with
/// whether each is callable.
type TypeAttributes = (String, String, Vec<(String, bool)>);

/// The router's allowlist names a method by its name alone (`.count()`,
/// `.year`), since a script's receivers have no static types: a method name
/// on it must then be safe on every receiver. Every public attribute of
/// CPython's builtin types, and of the types of monty's modules scripts use
/// most, is probed in monty, called (if callable) and read as a value; for
/// each `.name()` on the allowlist, every such type whose CPython has
/// `name` must have it callable in monty, and for each `.name` readable.
/// (The probe finds only *missing* attributes; that monty's answers agree is
/// the corpus's part.)
#[tokio::test(flavor = "multi_thread")]
async fn allowlisted_method_names_exist_in_monty_on_every_type_cpython_has_them_on() {
    let listed = run_on(PythonChoice::Cpython, BUILTIN_ATTRIBUTES, &registry()).await;
    assert_ok(&listed);
    let listed: Vec<TypeAttributes> = serde_json::from_str(listed.stdout.trim()).expect("the listing is JSON");
    let mut probe = String::from(
        "import json\nimport re\nimport datetime\nimport collections\nimport decimal\nimport pathlib\nout = []\n",
    );
    for (type_name, literal, attributes) in &listed {
        for (name, callable) in attributes {
            let modes: &[&str] = if *callable { &["call", "read"] } else { &["read"] };
            for mode in modes {
                let expr = if *mode == "call" {
                    format!("({literal}).{name}()")
                } else {
                    format!("({literal}).{name}")
                };
                probe.push_str(&format!(
                    "try:\n    {expr}\n    out.append(['{type_name}', '{name}', '{mode}', True])\nexcept AttributeError as e:\n    out.append(['{type_name}', '{name}', '{mode}', 'has no attribute' not in str(e)])\nexcept Exception:\n    out.append(['{type_name}', '{name}', '{mode}', True])\n"
                ));
            }
        }
    }
    probe.push_str("print(json.dumps(out))\n");
    let probed = run_on(PythonChoice::Monty, &probe, &registry()).await;
    assert_ok(&probed);
    let probed: Vec<(String, String, String, bool)> =
        serde_json::from_str(probed.stdout.trim()).expect("the probe is JSON");
    let mut missing = Vec::new();
    for key in chainbox::python_choice::allowlist() {
        let Some(attribute) = key.strip_prefix('.') else {
            continue;
        };
        if attribute.contains('=') || attribute.contains("**") {
            continue;
        }
        let (name, mode) = match attribute.strip_suffix("()") {
            Some(name) => (name, "call"),
            None => (attribute, "read"),
        };
        for (type_name, n, m, ok) in &probed {
            // `Path.group()` names the file owner's group: the CPython guest
            // has no `grp` module under WASI either, so both refuse it.
            let both_refuse = type_name == "pathlib.Path" && name == "group";
            // `Path.copy(target)` (3.14) always takes an argument, and the
            // walk refuses `.copy(...)` with one (list/dict/set take none).
            let refused_with_arguments = type_name == "pathlib.Path" && name == "copy";
            if n == name && m == mode && !ok && !both_refuse && !refused_with_arguments {
                missing.push(format!("{key} on {type_name}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "allowlisted method names some type of monty lacks where CPython's has them: {missing:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn gathered_calls_run_concurrently_on_the_host_from_cpython() {
    let script = "import asyncio\nawait asyncio.gather(*[sleep(seconds=0.5) for _ in range(6)])";
    let r = run_on(PythonChoice::Cpython, script, &registry()).await;
    assert_ok(&r);
    assert_eq!(r.output, json!([0.5, 0.5, 0.5, 0.5, 0.5, 0.5]));
    assert!(r.duration_ms < 2500.0, "six 0.5 s calls took {} ms", r.duration_ms);
}

#[tokio::test(flavor = "multi_thread")]
async fn auto_runs_a_monty_friendly_script_on_monty() {
    let r = run_on(PythonChoice::Auto, "await add(a=1, b=2)", &registry()).await;
    assert_ok(&r);
    assert_eq!(r.interpreter, Interpreter::Monty);
}

#[tokio::test(flavor = "multi_thread")]
async fn auto_runs_a_script_needing_cpython_on_cpython() {
    let script = "import statistics\nclass Miss(Exception):\n    pass\ndef pages():\n    yield 1\n    yield 3\nstatistics.mean(pages())";
    let r = run_on(PythonChoice::Auto, script, &registry()).await;
    assert_ok(&r);
    assert_eq!(r.interpreter, Interpreter::Cpython);
    assert_eq!(r.output, json!(2));
}

#[tokio::test(flavor = "multi_thread")]
async fn auto_hands_a_script_monty_cannot_parse_to_cpython() {
    // Nothing ran on monty (its parser refused the script), so CPython runs
    // it, and its answer (here CPython's own SyntaxError) is the chain's.
    let r = run_on(PythonChoice::Auto, "await add(a=1, b=\n", &registry()).await;
    assert_eq!(r.status, ChainStatus::Error);
    assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::Compile), "{r:#?}");
    assert_eq!(r.interpreter, Interpreter::Cpython);
    assert_eq!(r.tool_calls, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn match_statements_give_the_same_answer_under_auto() {
    let script = "match [1, 2]:\n    case [a, b]:\n        r = a + b\nr";
    let r = run_on(PythonChoice::Auto, script, &registry()).await;
    assert_ok(&r);
    assert_eq!(r.output, json!(3));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chain_is_never_restarted_after_a_tool_call() {
    // Forced onto monty, a feature it lacks fails at run time after the
    // call: the chain ends there (no second run, one record).
    let policy = ChainPolicy {
        python: PythonChoice::Monty,
        ..ChainPolicy::default()
    };
    let script = "await echo(text='side effect')\nimport statistics\nstatistics.mean([1, 2])";
    let r = engine()
        .run(script, &registry(), &policy, &Approval::auto(ToolRisk::Safe))
        .await;
    assert_eq!(r.status, ChainStatus::Error, "{r:#?}");
    assert_eq!(r.tool_calls, 1);
    assert_eq!(r.call_trace[0].status, CallStatus::Ok);
    assert_eq!(r.interpreter, Interpreter::Monty);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_result_json_names_the_interpreter() {
    let r = run_on(PythonChoice::Cpython, "1 + 1", &registry()).await;
    let v = serde_json::to_value(&r).expect("json");
    assert_eq!(v["interpreter"], "cpython");
    assert_eq!(v["output"], json!(2));
}

/// A CPython chain usually starts on the spare instance, made before the
/// chain was known: nothing of one chain (globals, patched modules, the
/// working directory's files) reaches the next.
#[tokio::test(flavor = "multi_thread")]
async fn a_cpython_chain_sees_nothing_of_the_chain_before() {
    let first =
        "import json, os\njson.dumps = None\nsecret = 41\nopen('left.txt', 'w').write('x')\nsorted(os.listdir('.'))";
    let r = run_on(PythonChoice::Cpython, first, &registry()).await;
    assert_ok(&r);
    assert_eq!(r.output, json!(["left.txt"]));
    let second = "import json, os\n[json.dumps({'a': 1}), 'secret' in globals(), os.listdir('.')]";
    for _ in 0..3 {
        let r = run_on(PythonChoice::Cpython, second, &registry()).await;
        assert_ok(&r);
        assert_eq!(r.output, json!(["{\"a\": 1}", false, []]));
    }
}

/// A freed pool slot keeps the pages its chain wrote and copies the
/// snapshot back into them (Linux 6.7+; elsewhere it is unmapped as
/// before). With one chain slot and the spare's, every chain from the
/// third on reuses a slot a chain wrote: patched modules, new globals and a
/// heap grown past what a slot keeps (16 MiB) are gone, and so is the
/// workspace.
#[tokio::test(flavor = "multi_thread")]
async fn a_reused_cpython_pool_slot_starts_from_the_snapshot() {
    let engine = Engine::with_config(EngineConfig {
        max_concurrent_chains: 1,
        ..EngineConfig::default()
    })
    .expect("engine");
    let policy = ChainPolicy {
        python: PythonChoice::Cpython,
        ..ChainPolicy::default()
    };
    let approval = Approval::auto(ToolRisk::Safe);
    let look = "import json, os, sys\n[json.dumps([1]), 'big' in globals(), len(sys.modules), os.listdir('.')]";
    let fresh = engine.run(look, &registry(), &policy, &approval).await;
    assert_ok(&fresh);
    let dirty = "import json, os, sys, base64\njson.dumps = None\nsys.modules['base64'].b64encode = None\n\
                 sys.modules['chainbox_left'] = json\nopen('left.txt', 'w').write('x')\n\
                 big = [bytes([i % 251]) * 4096 for i in range(8192)]\nlen(big)";
    for round in 0..4 {
        let r = engine.run(dirty, &registry(), &policy, &approval).await;
        assert_ok(&r);
        assert_eq!(r.output, json!(8192), "round {round}");
        let r = engine.run(look, &registry(), &policy, &approval).await;
        assert_ok(&r);
        assert_eq!(r.output, fresh.output, "round {round}");
    }
}

/// The snapshot componentize-py takes is initialised before the build
/// splices 64-bit CPython's numeric hashes into libpython: its dicts and sets
/// keyed by tuples or numbers (`dataclasses._hash_action`, `re`'s cache,
/// `_compat_pickle`'s maps) are rehashed by an instance's first chain. None
/// a script can reach from the modules misses one of its own keys.
#[tokio::test(flavor = "multi_thread")]
async fn no_container_in_the_cpython_snapshot_misses_its_own_keys() {
    let script = "import sys, types\nseen, stale, stack = set(), [], [m for m in list(sys.modules.values()) if m is not None]\nwhile stack:\n    o = stack.pop()\n    if id(o) in seen:\n        continue\n    seen.add(id(o))\n    try:\n        if isinstance(o, (dict, set, frozenset)):\n            stale.extend(repr(k)[:60] for k in list(o) if type(k) is not str and k not in o)\n        if isinstance(o, (types.ModuleType, type)):\n            stack.extend(list(vars(o).values()))\n        elif isinstance(o, types.FunctionType):\n            stack.extend([o.__code__, *(o.__defaults__ or ()), *(c.cell_contents for c in o.__closure__ or ())])\n        elif isinstance(o, types.CodeType):\n            stack.extend(o.co_consts)\n        elif isinstance(o, dict):\n            stack.extend([*o.keys(), *o.values()])\n        elif isinstance(o, (list, tuple, set, frozenset)):\n            stack.extend(o)\n        elif hasattr(o, '__dict__'):\n            stack.append(vars(o))\n    except Exception:\n        pass\nfrom dataclasses import dataclass\n@dataclass(frozen=True)\nclass P:\n    x: int\n[len(seen) > 50_000, stale, hash(P(1)) == hash((1,))]";
    let r = run_on(PythonChoice::Cpython, script, &registry()).await;
    assert_ok(&r);
    assert_eq!(r.output, json!([true, [], true]));
}

/// The spare instance is made with a workspace of its own preopened: a
/// chain given its own directory runs in that one (on a fresh instance),
/// every time, and the spare's is not touched.
#[tokio::test(flavor = "multi_thread")]
async fn a_cpython_chain_given_a_workspace_writes_there_not_in_a_spares() {
    let policy = ChainPolicy {
        python: PythonChoice::Cpython,
        ..ChainPolicy::default()
    };
    let script = "import os\nopen('mine.txt', 'w').write('x')\n[os.getcwd(), sorted(os.listdir('.'))]";
    for round in 0..3 {
        let dir = tempfile::tempdir().expect("temp dir");
        let options = RunOptions {
            workspace: Some(dir.path().to_path_buf()),
            ..RunOptions::default()
        };
        let r = engine()
            .run_with(script, &registry(), &policy, &Approval::auto(ToolRisk::Safe), options)
            .await;
        assert_ok(&r);
        assert_eq!(r.output, json!(["/workspace", ["mine.txt"]]), "round {round}");
        assert!(dir.path().join("mine.txt").exists(), "round {round}");
    }
}

/// The spare's warm-up makes a tool call of its own (`warm_up()`); no
/// chain sees that tool, and its trace has only the chain's own calls.
#[tokio::test(flavor = "multi_thread")]
async fn the_spares_warm_up_call_is_in_no_chain() {
    for _ in 0..3 {
        let r = run_on(
            PythonChoice::Cpython,
            "[await add(a=1, b=2), 'warm_up' in globals()]",
            &registry(),
        )
        .await;
        assert_ok(&r);
        assert_eq!(r.output, json!([3.0, false]));
        let tools: Vec<&str> = r.call_trace.iter().map(|c| c.tool.as_str()).collect();
        assert_eq!(tools, ["add"]);
    }
}

/// The spare instance was made under no chain's limits: a chain whose
/// memory limit is below what CPython needs to start fails as a fresh
/// instance would, with the memory limit's kind, and reports its peak.
#[tokio::test(flavor = "multi_thread")]
async fn a_memory_limit_below_cpythons_start_is_a_memory_error_not_a_spare() {
    let policy = ChainPolicy {
        python: PythonChoice::Cpython,
        max_memory_bytes: 4 << 20,
        ..ChainPolicy::default()
    };
    let r = engine()
        .run("1 + 1", &registry(), &policy, &Approval::auto(ToolRisk::Safe))
        .await;
    assert_eq!(r.status, ChainStatus::Error, "{r:#?}");
    assert_eq!(r.interpreter, Interpreter::Cpython);
    let ok = run_on(PythonChoice::Cpython, "1 + 1", &registry()).await;
    assert_ok(&ok);
    assert!(ok.usage.peak_memory_bytes > 4 << 20, "{:?}", ok.usage);
}

/// `gate()`: returns once `count` calls of it have arrived.
struct Gate(tokio::sync::Barrier);

#[async_trait::async_trait]
impl chainbox::Tool for Gate {
    fn info(&self) -> &chainbox::ToolInfo {
        static INFO: std::sync::OnceLock<chainbox::ToolInfo> = std::sync::OnceLock::new();
        INFO.get_or_init(|| {
            chainbox::ToolInfo::new(
                "gate",
                "Waits for every chain to arrive.",
                json!({"type": "object", "properties": {}}),
            )
        })
    }
    async fn execute(
        &self,
        _ctx: chainbox::ToolContext,
        _args: serde_json::Map<String, Value>,
    ) -> Result<chainbox::ToolOutput, chainbox::ToolError> {
        self.0.wait().await;
        Ok(chainbox::ToolOutput::Value(Value::Null))
    }
}

/// CPython guests hold their thread while parked in a tool call, and
/// `read_file` reads on tokio's blocking pool: the guests run on threads
/// of their own, so more parked CPython chains than the pool has threads
/// all get their reads done.
#[test]
fn more_parked_cpython_chains_than_blocking_threads_all_finish() {
    const BLOCKING_THREADS: usize = 4;
    const CHAINS: usize = 8;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(BLOCKING_THREADS)
        .enable_all()
        .build()
        .expect("runtime");
    let root = tempfile::tempdir().expect("root");
    std::fs::write(root.path().join("a.txt"), "hello").expect("file");
    let read_file = chainbox::tools::read_file::ReadFileTool::new(root.path()).expect("read_file");
    let gate = Gate(tokio::sync::Barrier::new(CHAINS));
    let registry = ToolRegistry::from_local([
        Arc::new(read_file) as Arc<dyn chainbox::Tool>,
        Arc::new(gate) as Arc<dyn chainbox::Tool>,
    ])
    .expect("registry");
    let policy = ChainPolicy {
        python: PythonChoice::Cpython,
        total_timeout_s: 60.0,
        call_timeout_s: 60.0,
        granted_permissions: [chainbox::tools::Permission::FsRead].into(),
        ..ChainPolicy::default()
    };
    let approval = Approval::auto(ToolRisk::Safe);
    runtime.block_on(async {
        let engine = chainbox::Engine::with_config(chainbox::EngineConfig {
            max_concurrent_chains: CHAINS as u32,
            ..chainbox::EngineConfig::default()
        })
        .expect("engine");
        engine.prepare_cpython().await.expect("the CPython guest");
        let script = "await gate()\n(await read_file(path='a.txt'))['text']";
        let chains = (0..CHAINS).map(|_| engine.run(script, &registry, &policy, &approval));
        let results = tokio::time::timeout(std::time::Duration::from_secs(30), futures::future::join_all(chains))
            .await
            .expect("the parked chains' reads never ran: their guests hold the blocking pool");
        for r in results {
            assert_ok(&r);
            assert_eq!(r.output, json!("hello"));
        }
    });
}

/// A script can call the `host` bridge itself, with a string as large as
/// its memory holds: the host refuses one over the guest-message limit
/// (256 MiB, wasmtime's hostcall fuel) before copying it, as it does the
/// monty guest's, with a typed error.
#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_message_to_the_host_bridge_is_refused_uncopied() {
    let policy = ChainPolicy {
        python: PythonChoice::Cpython,
        max_memory_bytes: 1 << 30,
        max_cpu_s: 30.0,
        total_timeout_s: 60.0,
        ..ChainPolicy::default()
    };
    let script = "from wit_world.imports import host\nhost.call('x' * (256 * 1024 * 1024 + 1))";
    let r = engine()
        .run(script, &registry(), &policy, &Approval::auto(ToolRisk::Safe))
        .await;
    assert_eq!(r.status, ChainStatus::Error, "{r:#?}");
    let error = r.error.as_ref().expect("an error");
    assert_eq!(error.error_type, "ProtocolError", "{error:#?}");
    assert!(
        error.message.contains("a message over the 268435456-byte limit"),
        "{error:#?}"
    );
}
