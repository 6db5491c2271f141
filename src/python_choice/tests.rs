//! The router's unit tests: the allowlist's own checks, then what a script
//! routes to, one behaviour per test.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::{Interpreter, MAX_SCANNED_BYTES, Needs, allowlist, keys, needs_cpython};

/// The corpus cases `auto` runs on monty (`tests/it/corpus.rs` checks each
/// runs there and gives CPython's answer): not `cpython_*`, not `[routed]`.
fn monty_cases() -> BTreeMap<String, String> {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let known = std::fs::read_to_string(corpus.join("known_differences.toml")).expect("known_differences.toml");
    let known: toml::Table = known.parse().expect("known_differences.toml is TOML");
    let routed = known
        .get("routed")
        .and_then(|r| r.as_table())
        .cloned()
        .unwrap_or_default();
    let mut cases = BTreeMap::new();
    for entry in std::fs::read_dir(corpus.join("cases")).expect("tests/corpus/cases") {
        let path = entry.expect("a case").path();
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_owned();
        if path.extension().is_some_and(|e| e == "py") && !name.starts_with("cpython_") && !routed.contains_key(&name) {
            cases.insert(name, std::fs::read_to_string(&path).expect("a case's script"));
        }
    }
    cases
}

#[test]
fn the_allowlist_is_sorted_and_has_no_duplicates() {
    for pair in allowlist().windows(2) {
        assert!(
            pair[0] < pair[1],
            "allowlist.txt is not sorted (or repeats) at {:?}",
            pair
        );
    }
}

/// Every key of the allowlist is used by a corpus case that runs on monty,
/// so each entry has a differential case showing monty agrees with CPython;
/// and every key such a case uses is on the allowlist (else the case would
/// not run on monty). On failure, both lists are printed.
#[test]
fn every_allowlist_entry_has_a_corpus_case() {
    let mut used: BTreeMap<String, String> = BTreeMap::new();
    for (name, script) in monty_cases() {
        let Some(case_keys) = keys(&script) else {
            panic!("corpus case {name} does not parse")
        };
        for key in case_keys {
            used.entry(key).or_insert_with(|| name.clone());
        }
    }
    let allow: BTreeSet<&str> = allowlist().iter().copied().collect();
    let unbacked: Vec<&str> = allow.iter().copied().filter(|k| !used.contains_key(*k)).collect();
    let missing: Vec<(&String, &String)> = used.iter().filter(|(k, _)| !allow.contains(k.as_str())).collect();
    if !missing.is_empty() {
        eprintln!(
            "keys monty corpus cases use that allowlist.txt lacks ({}):",
            missing.len()
        );
        for (key, case) in &missing {
            eprintln!("    {:?}, // {case}", key);
        }
    }
    assert!(
        unbacked.is_empty(),
        "allowlist.txt entries no monty corpus case uses (add a case or drop the entry): {unbacked:?}"
    );
    assert!(
        missing.is_empty(),
        "keys monty corpus cases use that allowlist.txt lacks (see above)"
    );
}

/// The router sends every corpus case that needs CPython (`cpython_*`, and
/// the cases `[routed]` lists) to CPython, and every other case to monty.
#[test]
fn the_router_sends_every_corpus_case_where_it_belongs() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/cases");
    let monty = monty_cases();
    let mut wrong = Vec::new();
    for entry in std::fs::read_dir(&corpus).expect("tests/corpus/cases") {
        let path = entry.expect("a case").path();
        if path.extension().is_none_or(|e| e != "py") {
            continue;
        }
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_owned();
        let script = std::fs::read_to_string(&path).expect("a case's script");
        let expected = if monty.contains_key(&name) {
            Interpreter::Monty
        } else {
            Interpreter::Cpython
        };
        if Interpreter::for_script(&script) != expected {
            wrong.push(format!(
                "{name}: expected {expected:?}, the scan found {:?}",
                needs_cpython(&script)
            ));
        }
    }
    assert!(wrong.is_empty(), "cases routed wrongly:\n{}", wrong.join("\n"));
}

// --- routing decisions, from the denylist router's tests ------------------
// Each script below was routed by the denylist router this one replaced;
// the allowlist sends every one it sent to CPython there too, and refuses
// no context it let through. (`rule` and `says` named the denylist's rule;
// the allowlist's findings are worded otherwise.)

fn assert_cpython(script: &str, _rule: &str, _says: &str) {
    assert!(needs_cpython(script).is_some(), "expected CPython for:\n{script}");
}

/// No context check refuses `script` and it parses: it runs on monty as
/// soon as the allowlist holds its keys (a key no corpus case backs yet
/// sends it to CPython, which is the allowlist's rule, not a refusal).
fn assert_monty(script: &str) {
    let found = needs_cpython(script);
    assert!(
        matches!(found, None | Some(Needs::NotAllowed { .. })),
        "expected monty (or a key not yet on the allowlist) for:\n{script}\nfound: {found:?}"
    );
}
#[test]
fn import_of_a_module_monty_lacks() {
    assert_cpython(
        "import statistics\nstatistics.mean([1])",
        "import",
        "imports `statistics`, which monty does not have (line 1)",
    );
    assert_cpython("x = 1\nfrom io import StringIO", "import", "imports `io`");
    assert_cpython("import json, asyncio, textwrap", "import", "`textwrap`");
}

#[test]
fn import_of_a_submodule_monty_lacks() {
    assert_cpython("import collections.abc", "import", "`collections.abc`");
    assert_cpython("from xml.etree import ElementTree", "import", "`xml.etree`");
}

#[test]
fn imports_of_monty_modules_stay_monty() {
    assert_monty(
        "import json\nimport re, math\nimport asyncio as aio\nimport os.path\nfrom os import path\n\
         from datetime import datetime, timedelta\nfrom collections import Counter, defaultdict\n\
         from __future__ import annotations\nfrom typing import Any, Optional\n",
    );
}

#[test]
fn from_import_of_a_name_the_module_lacks() {
    assert_cpython(
        "from dataclasses import dataclass, asdict",
        "import",
        "`dataclasses.asdict`",
    );
    assert_cpython("from functools import wraps", "import", "`functools.wraps`");
    assert_cpython(
        "from collections import (\n    Counter,\n    OrderedDict,\n)",
        "import",
        "`collections.OrderedDict`",
    );
}

#[test]
fn wildcard_import() {
    assert_cpython("from math import *", "import", "import *");
}

#[test]
fn relative_import() {
    assert_cpython("from . import helpers", "import", "relative import");
}

#[test]
fn exception_constructors_monty_keeps_only_args_of_go_to_cpython() {
    assert_cpython("raise OSError(2, 'missing')", "exception_arguments", "OSError");
    assert_cpython(
        "e = FileNotFoundError(2, 'x', 'f.txt')",
        "exception_arguments",
        "OSError",
    );
    assert_cpython("raise PermissionError(*details)", "exception_arguments", "OSError");
    assert_cpython(
        "raise SyntaxError('m', ('f', 1, 2, 'x'))",
        "exception_arguments",
        "SyntaxError",
    );
    assert_cpython("UnicodeDecodeError('x')", "exception_arguments", "UnicodeDecodeError");
    assert_cpython(
        "import json\nraise json.JSONDecodeError('m', '{', 0)",
        "exception_arguments",
        "JSONDecodeError",
    );
    assert_cpython("raise AttributeError('a', name='n')", "exception_arguments", "keyword");
    // monty keeps these as CPython's args.
    assert_monty("raise OSError('disk full')");
    assert_monty("raise KeyError('k', 2)");
    assert_monty("raise ValueError('bad', 5)\nraise SyntaxError('m')");
    assert_monty("raise AttributeError('a')");
}

#[test]
fn raise_from_is_not_an_import() {
    assert_monty("try:\n    x = 1\nexcept KeyError as e:\n    raise ValueError('no') from e");
}

#[test]
fn module_attribute_monty_lacks() {
    assert_cpython(
        "import asyncio\nt = asyncio.create_task(f())",
        "module_attribute",
        "`asyncio.create_task`",
    );
    assert_cpython(
        "import asyncio as aio\naio.wait_for(f(), 1)",
        "module_attribute",
        "`asyncio.wait_for`",
    );
    assert_cpython(
        "import os\nos.path.islinkx('a')",
        "module_attribute",
        "`os.path.islinkx`",
    );
    assert_cpython(
        "import dataclasses\ndataclasses.fields(x)",
        "module_attribute",
        "`dataclasses.fields`",
    );
}

#[test]
fn module_attributes_monty_has_stay_monty() {
    assert_monty("import os, json, re\nos.path.join('a', 'b')\njson.dumps({}, indent=2)\nre.compile('x').findall('y')");
}

#[test]
fn unbound_method_of_a_builtin_type() {
    assert_cpython("names = list(map(str.upper, ['a']))", "type_attribute", "`str.upper`");
    assert_cpython("int.bit_length(5)", "type_attribute", "`int.bit_length`");
    assert_cpython("dict.items(d)", "type_attribute", "`dict.items`");
}

#[test]
fn type_attributes_monty_has_stay_monty() {
    assert_monty("d = dict.fromkeys(['a'], 0)\nn = str.__name__\nb = bytes.fromhex('00')");
    assert_monty("n = int.from_bytes(b'ab', 'big')\nt = bool.from_bytes(b'a')\nx = float.fromhex('0x1p3')");
    assert_monty("from datetime import date, timezone\nlimits = [date.max, timezone.utc]");
}

#[test]
fn a_types_class_method_read_as_a_value_goes_to_cpython() {
    let says = "only as a call";
    assert_cpython("f = int.from_bytes\nf(b'a')", "type_attribute", says);
    assert_cpython("parse = float.fromhex", "type_attribute", says);
    assert_cpython("list(map(bytes.fromhex, ['00']))", "type_attribute", says);
}

#[test]
fn rebound_type_name_is_not_the_type() {
    assert_monty("str = 'abc'\nstr.upper()");
}

#[test]
fn library_class_method_monty_lacks() {
    assert_cpython(
        "from datetime import datetime\ndatetime.utcnow()",
        "type_attribute",
        "`datetime.utcnow`",
    );
    assert_cpython(
        "import datetime\ndatetime.date.fromtimestamp(0)",
        "type_attribute",
        "`date.fromtimestamp`",
    );
    assert_monty("from datetime import datetime, date, timezone\ndatetime.now(timezone.utc)\ndate.today()");
}

#[test]
fn an_encoding_monty_lacks() {
    let says = "encoding monty's codecs";
    assert_cpython("b.decode('cp1252')", "encoding", says);
    assert_cpython("s.encode(encoding='koi8-r', errors='ignore')", "encoding", says);
    assert_cpython("text = 'é'.encode('mac_roman')", "encoding", says);
    assert_cpython("raw = bytes(text, 'cp1252')", "encoding", says);
    assert_cpython("text = str(raw, encoding='cp437')", "encoding", says);
}

#[test]
fn an_encoding_monty_has_stays_monty() {
    assert_monty("b.decode('utf-8')\ns.encode('Latin-1', 'replace')\ns.encode()\nb.decode(errors='ignore')");
    assert_monty("x = 'UTF8'\ns.encode(x)\nb.decode('ascii', 'cp1252')");
    assert_monty("bytes('é', 'utf-8')\nstr(b, 'latin-1')\nstr('cp1252')\nbytes([1, 2])");
}

#[test]
fn gather_with_another_keyword() {
    assert_cpython(
        "import asyncio\nr = await asyncio.gather(a(), timeout=3)",
        "keyword_argument",
        "`timeout=` to `asyncio.gather`",
    );
}

#[test]
fn gather_with_return_exceptions_stays_monty() {
    assert_monty("import asyncio\nr = await asyncio.gather(a(), b(), return_exceptions=True)");
    assert_monty("from asyncio import gather\nawait gather(a(), return_exceptions=False)");
}

#[test]
fn own_coroutine_gathered_before_a_tool_call() {
    let says = "starts them in order";
    let own = "async def score(u):\n    return await get_user(u)\n\n";
    let cases = [
        "r = await asyncio.gather(score(1), get_weather('Paris'))",
        "r = await asyncio.gather(*[score(u) for u in users], get_weather('Paris'))",
        "t = get_weather('Paris')\nr = await gather(score(1), t, return_exceptions=True)",
    ];
    for case in cases {
        assert_cpython(&format!("{own}{case}"), "gather_start_order", says);
    }
}

#[test]
fn tool_calls_gathered_before_own_coroutines_stay_monty() {
    let own = "async def score(u):\n    return await get_user(u)\n\n";
    let cases = [
        "r = await asyncio.gather(get_weather('Paris'), score(1), score(2))",
        "r = await asyncio.gather(*[score(u) for u in range(3)], return_exceptions=True)",
        "r = await asyncio.gather(*[get_user(u) for u in range(3)], *[score(u) for u in range(3)])",
    ];
    for case in cases {
        assert_monty(&format!("{own}{case}"));
    }
}

#[test]
fn gather_without_keywords_stays_monty() {
    assert_monty("import asyncio\nr = await asyncio.gather(*[get_user(i) for i in range(3)])");
}

#[test]
fn json_hooks_monty_lacks() {
    assert_cpython(
        "import json\njson.dumps(x, cls=Encoder)",
        "keyword_argument",
        "`cls=` to `json.dumps`",
    );
    assert_cpython(
        "import json\njson.loads(s, object_hook=f)",
        "keyword_argument",
        "`object_hook=`",
    );
    assert_monty("import json\njson.dumps(x, indent=2, sort_keys=True, separators=(',', ':'))");
    assert_monty("import json\njson.dumps(row, default=str)\njson.dump(row, f, default=encode)");
}

#[test]
fn json_loads_keywords_monty_lacks_go_to_cpython() {
    assert_cpython(
        "import json\njson.loads(text, strict=False)",
        "keyword_argument",
        "`strict=`",
    );
    assert_cpython(
        "import json\njson.load(f, parse_float=Decimal)",
        "keyword_argument",
        "`parse_float=` to `json.load`",
    );
    assert_monty("import json\njson.loads(s=text, parse_float=Decimal, parse_int=float)");
}

#[test]
fn tomllib_parse_float_goes_to_cpython() {
    let says = "`parse_float=` to `tomllib.loads`";
    assert_cpython(
        "import tomllib\ntomllib.loads(s, parse_float=Decimal)",
        "keyword_argument",
        says,
    );
    assert_monty("import tomllib\nconfig = tomllib.loads(text)");
}

#[test]
fn dataclass_options_monty_lacks() {
    assert_cpython(
        "from dataclasses import dataclass\n@dataclass(order=True)\nclass A:\n    x: int",
        "keyword_argument",
        "`order=`",
    );
    assert_cpython(
        "import dataclasses\n@dataclasses.dataclass(repr=False)\nclass A:\n    x: int",
        "keyword_argument",
        "`repr=`",
    );
    assert_monty(
        "from dataclasses import dataclass, field\n@dataclass(frozen=True)\nclass A:\n    x: int = field(default=0)",
    );
}

#[test]
fn round_to_any_digits_stays_monty() {
    assert_monty("n = round(2.5)\nm = round(sum([1.5, 2]))");
    assert_monty("[round(2.675, 2), round(x, ndigits=1), round(0.5, 0)]");
    assert_monty("[round(1234.5, -2), round(x, digits), round(x, ndigits=d)]");
}

#[test]
fn re_sub_with_a_string_or_a_function_stays_monty() {
    assert_monty("import re\nre.sub(r'\\s+', ' ', s)\nre.compile('a').sub('b', s)");
    assert_monty("import re\nre.sub(r'\\d+', lambda m: m.group(0) * 2, s)\nre.compile('a').subn(repl, s)");
}

#[test]
fn yield_is_a_generator() {
    assert_cpython(
        "def pages():\n    yield 1\n",
        "syntax",
        "uses `yield` (generators) (line 2)",
    );
    assert_cpython("def pages():\n    yield from [1]\n", "syntax", "`yield`");
}

#[test]
fn del_statement() {
    assert_monty("d = {'a': 1}\ndel d['a']");
    assert_monty("x = 1\ndel x");
    assert_monty("def f(xs):\n    del xs[0], xs[1:3]\n    del (a, [b, c])\n");
    assert_monty("import math\nclass C:\n    pass\nc = C()\nc.x = 1\ndel c.x\nmath.pi");
    assert_cpython("import math\ndel math.pi", "syntax", "module's attribute");
    assert_cpython("import math\nx = 1\ndel x, math.pi", "syntax", "module's attribute");
    assert_cpython("class A:\n    x = 1\n    del x", "class_body", "class body");
    assert_monty("class R:\n    def __delitem__(self, k):\n        pass\nr = R()\ndel r[0]");
}

#[test]
fn class_inheritance() {
    assert_cpython("class NotFound(Exception):\n    pass", "syntax", "class inheritance");
}

#[test]
fn class_without_base_stays_monty() {
    assert_monty(
        "from dataclasses import dataclass\n@dataclass\nclass Row:\n    \"\"\"A row.\"\"\"\n    name: str\n    \
         total: float = 0.0\n\n    def label(self):\n        return self.name\n\nclass Empty():\n    pass\n",
    );
}

#[test]
fn class_inside_a_function_or_class() {
    assert_cpython(
        "def make():\n    if True:\n        class Row:\n            pass\n    return Row",
        "syntax",
        "class inside a function or class (line 3)",
    );
    assert_cpython("class A:\n    class B:\n        pass", "syntax", "class inside");
}

#[test]
fn class_in_a_top_level_block_stays_monty() {
    assert_monty("if True:\n    class Row:\n        pass\ntry:\n    class Col:\n        pass\nexcept E:\n    pass");
}

#[test]
fn async_for_and_async_with() {
    assert_cpython(
        "async def f():\n    async for x in y:\n        pass",
        "syntax",
        "`async for`",
    );
    assert_cpython(
        "async def f():\n    async with y:\n        pass",
        "syntax",
        "`async with`",
    );
}

#[test]
fn except_star() {
    assert_cpython("try:\n    pass\nexcept* ValueError:\n    pass", "syntax", "except*");
}

#[test]
fn type_alias_statement() {
    assert_cpython("type Rows = list[dict]", "syntax", "`type` alias");
    assert_monty("kind = type(x)\ntype(x)");
}

#[test]
fn matmul_assignment() {
    assert_cpython("m @= n", "syntax", "`@=`");
}

#[test]
fn surrogate_escapes_go_to_cpython() {
    let says = "writes a surrogate (`\\ud800`) in a string";
    assert_cpython(r#"x = "\ud800""#, "syntax", says);
    assert_cpython(r#"smile = '\ud83d\ude00'"#, "syntax", says);
    assert_cpython(r#"x = f"{a}\U0000DC80""#, "syntax", says);
    assert_monty(r#"x = "\u00e9\U0001F600\\ud800""#);
    assert_monty(r#"x = r"\ud800" + b"\ud800".decode()"#);
    // A truncated escape is CPython's SyntaxError: it runs there to say so.
    assert_cpython(r#"x = "\ud8""#, "", "");
}

#[test]
fn os_error_attributes_stay_on_monty() {
    // monty's system OSErrors carry CPython's fields (vendored
    // monty-types' `OsErrorData`).
    assert_monty("try:\n    open('x')\nexcept OSError as e:\n    n = (e.errno, e.strerror, e.filename)");
    assert_monty("def f(e):\n    return e.filename2");
}

#[test]
fn bytes_patterns_go_to_cpython() {
    let says = "matches a bytes pattern";
    assert_cpython("import re\nre.findall(rb'\\d+', data)", "bytes_pattern", says);
    assert_cpython("import re\np = re.compile(b'[a-z]+', re.I)", "bytes_pattern", says);
    assert_cpython(
        "import re\nre.sub(pattern=b'x', repl=b'y', string=data)",
        "bytes_pattern",
        says,
    );
    assert_cpython("import re\nre.findall(r'\\w+'.encode(), data)", "bytes_pattern", says);
    assert_cpython("import re\nre.split(sep.encode('ascii'), data)", "bytes_pattern", says);
    assert_cpython("import re\nre.search(bytes([120]), data)", "bytes_pattern", says);
    assert_monty("import re\nre.findall(r'\\d+', text)\nre.sub('x', 'y', b'x'.decode())\nre.search(b'x'.decode(), s)");
    assert_cpython(
        "import re\nre.findall((a + b).encode('utf-8'), data)",
        "bytes_pattern",
        says,
    );
    assert_monty("import re\nre.findall(p.encode().decode(), s)\nre.search(bytes(3).hex() + 'x', s)");
    assert_monty("import re\nre.findall(f(p.encode()), s)\nre.search(str(bytes(3)), s)\nre.match(g(x)(y), s)");
}

#[test]
fn nan_objects_go_to_cpython() {
    let says = "makes a NaN with `float('nan')`";
    assert_cpython("missing = float('nan')", "nan_identity", says);
    assert_cpython("xs = [float(\" -NaN \"), 1.0]", "nan_identity", says);
    assert_monty("import math\nx = math.nan\ny = float('inf')\nz = float(text)\nw = float('1.5')");
}

#[test]
fn printing_to_a_file_goes_to_cpython() {
    let says = "prints to a file";
    assert_cpython(
        "with open('o.txt', 'w') as f:\n    print('x', file=f)",
        "print_to_file",
        says,
    );
    assert_cpython("print(*rows, sep=',', file=out)", "print_to_file", says);
    assert_monty("import sys\nprint('x', file=sys.stderr)\nprint('y', end='', file=sys.stdout)\nprint(file)");
}

#[test]
fn re_flags_as_values_go_to_cpython() {
    let says = "uses a `re` flag as a value";
    assert_cpython("import re\nrepr(re.I)", "re_flag_value", says);
    assert_cpython(
        "import re\nFLAGS = re.I | re.M\nre.compile('a', FLAGS)",
        "re_flag_value",
        says,
    );
    assert_cpython("from re import IGNORECASE\nprint(IGNORECASE)", "re_flag_value", says);
    assert_cpython("import re as r\nx = [r.S]", "re_flag_value", says);
    assert_monty(
        "import re\np = re.compile('a+', re.I | re.M)\nre.findall('x', s, flags=re.S)\nre.sub('a', 'b', s, 0, re.I)\nm = p.search('A')",
    );
}

#[test]
fn files_consumed_whole_before_a_read_go_to_cpython() {
    let says = "consumes a file it has not read";
    for consumer in [
        "''.join(f)",
        "lines.extend(f)",
        "seen.update(f)",
        "dict.fromkeys(f)",
        "[*f]",
        "print(*f)",
        "'x' in f",
        "a, b = f",
        "x = 'x' not in f",
    ] {
        let script = format!("with open('a.txt') as f:\n    r = {consumer}\n");
        assert_cpython(&script, "file_consumed_whole", says);
    }
    assert_cpython("f = open('a.txt')\nout = ' '.join(f)", "file_consumed_whole", says);
    assert_cpython(
        "from pathlib import Path\nwith Path('a').open() as fh:\n    s = set()\n    s.update(fh)",
        "file_consumed_whole",
        says,
    );
}

#[test]
fn files_read_in_loops_and_builtins_stay_on_monty() {
    for script in [
        "with open('a.txt') as f:\n    for line in f:\n        print(line)",
        "with open('a.txt') as f:\n    rows = list(f)",
        "with open('a.txt') as f:\n    text = f.read()\n    parts = ','.join(text.split())",
        "with open('a.txt') as f:\n    first = next(f)\n    g = f",
        "with open('a.txt') as f:\n    n = sum(1 for _ in f)",
        "with open('a.txt') as f:\n    data = json.load(f)",
    ] {
        assert_monty(script);
    }
}

#[test]
fn exclusive_and_update_file_modes_go_to_cpython() {
    let says = "opens a file for exclusive creation or update";
    assert_cpython("with open('o.txt', 'x') as f:\n    f.write('x')", "file_mode", says);
    assert_cpython("f = open(name, mode='r+')", "file_mode", says);
    assert_cpython("f = open(name, 'wb+', encoding=None)", "file_mode", says);
    assert_cpython("from pathlib import Path\nf = Path('a').open('a+')", "file_mode", says);
    assert_cpython("f = open(name, how)", "file_mode", says);
    assert_monty(
        "f = open('a')\ng = open('b', 'w')\nh = open('c', mode='rb', encoding=None)\nfrom pathlib import Path\nPath('a').open()\np = Path('b')\np.open('a')",
    );
}

#[test]
fn t_string() {
    assert_cpython("s = t'hi {name}'", "syntax", "t-string");
}

#[test]
fn several_double_star_unpackings_in_a_call() {
    assert_cpython("f(**a, **b)", "syntax", "`**`");
    assert_monty("f(**a)\nd = {**a, **b}\nx = 2 ** 3");
}

#[test]
fn method_decorator() {
    assert_cpython(
        "class A:\n    @property\n    def x(self):\n        return 1",
        "class_body",
        "decorates a method",
    );
}

#[test]
fn statement_in_a_class_body() {
    assert_cpython("class A:\n    if True:\n        x = 1", "class_body", "class body");
    assert_cpython("class A:\n    a, b = 1, 2", "class_body", "class body");
}

#[test]
fn own_coroutine_never_awaited() {
    assert_cpython(
        "async def notify(u):\n    return await send_email(to=u)\n\nnotify(1)\n",
        "unawaited_own_coroutine",
        "without `await` (CPython warns if it is never awaited, monty does not) (line 4)",
    );
}

#[test]
fn own_coroutine_awaited_or_gathered_stays_monty() {
    assert_monty(
        "import asyncio\nasync def one(i):\n    return await get_user(i)\n\nfirst = await one(1)\n\
         rest = await asyncio.gather(one(2), *[one(i) for i in range(3, 5)])\n",
    );
}

#[test]
fn builtin_monty_lacks() {
    assert_cpython(
        "class A:\n    def __init__(self):\n        super().__init__()",
        "missing_builtin",
        "`super`",
    );
    assert_cpython(
        "try:\n    x = 1\nexcept ConnectionError:\n    pass",
        "missing_builtin",
        "`ConnectionError`",
    );
    assert_cpython("print(callable(f))", "missing_builtin", "`callable`");
}

#[test]
fn script_bound_name_is_not_the_builtin() {
    assert_monty("input = await get_user(1)\nprint(input)\ndef dir(x):\n    return x\nf(vars=1)");
}

#[test]
fn eval_and_exec() {
    assert_cpython("eval('1 + 1')", "eval_exec", "eval");
    assert_cpython("exec(code)", "eval_exec", "exec");
}

#[test]
fn special_method_monty_never_calls() {
    assert_cpython(
        "class A:\n    def __lt__(self, other):\n        return True",
        "special_method",
        "`__lt__`",
    );
    assert_cpython(
        "class A:\n    def __len__(self):\n        return 0",
        "special_method",
        "`__len__`",
    );
}

#[test]
fn special_methods_monty_calls_stay_monty() {
    assert_monty(
        "class A:\n    def __init__(self):\n        self.x = 1\n    def __repr__(self):\n        return 'A'\n    \
         def __eq__(self, o):\n        return True",
    );
}

#[test]
fn special_attribute_monty_lacks() {
    assert_cpython("vars_of = obj.__dict__", "special_attribute", "`__dict__`");
    assert_cpython("A.__subclasses__()", "special_attribute", "`__subclasses__`");
    assert_monty("name = type(obj).__name__\ncls = obj.__class__");
    assert_monty("name = f.__qualname__");
    assert_cpython("doc = f.__doc__", "special_attribute", "`__doc__`");
    assert_cpython("where = f.__module__", "special_attribute", "`__module__`");
}

#[test]
fn an_attribute_set_on_a_function_goes_to_cpython() {
    let says = "attribute on a function";
    assert_cpython("def f():\n    return 1\nf.calls = 0", "function_attribute", says);
    assert_cpython(
        "def f():\n    f.calls += 1\nf.calls = 0\nf()",
        "function_attribute",
        says,
    );
    assert_monty("def f(row):\n    row.total = 1\n    return row.total == 1");
}

#[test]
fn a_builtin_values_special_method_goes_to_cpython() {
    let says = "`__getitem__`";
    assert_cpython("best = max(d, key=d.__getitem__)", "special_attribute", says);
    assert_cpython("'ab'.__mul__(2)", "special_attribute", "`__mul__`");
}

#[test]
fn a_user_classs_own_special_method_stays_monty() {
    assert_monty("class V:\n    def __add__(self, o):\n        return 1\n\nf = V().__add__\nf(V())");
}

#[test]
fn generator_expression_not_consumed_whole_goes_to_cpython() {
    let says = "generator expression";
    assert_cpython(
        "first = next((r for r in rows if r['id'] > 2), None)",
        "generator_expression",
        says,
    );
    assert_cpython("ok = any(r['s'] > 0 for r in rows)", "generator_expression", says);
    assert_cpython("g = (x * 2 for x in xs)\na = sum(g)", "generator_expression", says);
    assert_cpython(
        "for x in (f(y) for y in ys):\n    print(x)",
        "generator_expression",
        says,
    );
    assert_cpython("pairs = list(zip((a for a in xs), ys))", "generator_expression", says);
    assert_cpython(
        "def sum(xs):\n    return 0\ntotal = sum(x for x in xs)",
        "generator_expression",
        says,
    );
}

#[test]
fn generator_expression_consumed_whole_stays_monty() {
    assert_monty("total = sum(r['n'] for r in rows if r['n'])");
    assert_monty("names = ', '.join(str(x) for x in xs)\nbest = max(len(w) for w in words)");
    assert_monty("d = dict((k, v) for k, v in items)\nt = tuple(x for x in xs)\nl = sorted(x for x in xs)");
    assert_monty("from collections import Counter\nc = Counter(w.lower() for w in words)");
    assert_monty("ids.extend(u['id'] for u in page)\nusers = await asyncio.gather(*(get_user(i) for i in ids))");
    assert_monty("squares = [x * x for x in xs]\nfor x in xs:\n    print(x)\nd = {k: v for k, v in pairs}");
}

#[test]
fn lazy_iterators_not_used_whole_go_to_cpython() {
    let says = "`zip`/`map`";
    assert_cpython("e = enumerate(rows)\nfirst = next(e)", "eager_iterator", says);
    assert_cpython("pairs = zip(a, b)\nn = len(list(pairs))", "eager_iterator", says);
    assert_cpython("print(zip(a, b))", "eager_iterator", says);
    assert_cpython("for n in map(int, parts):\n    total += n", "eager_iterator", says);
    assert_cpython("ok = any(map(check, rows))", "eager_iterator", says);
    assert_cpython("xs = list(zip(range(3), map(f, rows)))", "eager_iterator", says);
    assert_cpython("for p in zip(a, b) + extra:\n    print(p)", "eager_iterator", says);
    assert_cpython("hit = (1, 2) in zip(a, b)", "eager_iterator", says);
}

#[test]
fn lazy_iterators_used_whole_stay_monty() {
    assert_monty("for i, (a, b) in enumerate(zip(xs, ys), 1):\n    print(i, a, b)");
    assert_monty(
        "d = dict(zip(keys, values))\ns = ', '.join(map(str, xs))\nbig = list(filter(lambda r: r['n'] > 2, rows))",
    );
    assert_monty("top = sorted(zip(scores, names), reverse=True)\nm = max(map(len, words), default=0)");
    assert_monty("cols = list(zip(*rows))\nprint(*map(str, xs))\nbackwards = [x for x in reversed(xs) if x]");
    assert_monty("for line in map(str, items):\n    out.append(line)\nfor r in filter(None, rows):\n    n += 1");
}

#[test]
fn getitem_without_iter_is_iterated_by_cpython() {
    let class = "class Basket:\n    def __init__(self, items):\n        self.items = items\n    def __getitem__(self, i):\n        return self.items[i]\n";
    assert_cpython(
        &format!("{class}list(Basket([1, 2]))"),
        "special_method",
        "`__getitem__` without `__iter__`",
    );
    assert_monty(&format!(
        "{class}    def __iter__(self):\n        return iter(self.items)\nlist(Basket([1, 2]))"
    ));
}

#[test]
fn zero_division_messages_stay_monty() {
    // CPython 3.14 (the guest) words them all as monty does.
    assert_monty("try:\n    x = 1 / 0\nexcept ZeroDivisionError as e:\n    print(e)");
    assert_monty(
        "try:\n    x = 1 / 0\nexcept ZeroDivisionError:\n    x = 0\ntry:\n    pass\nexcept ValueError as e:\n    pass",
    );
}

#[test]
fn sets_iterated_listed_or_printed_stay_monty() {
    // monty's sets iterate in CPython's order (its hashes, its table).
    assert_monty("list({3, 1, 2})");
    assert_monty("ids = [3, 1]\nlist(set(ids))");
    assert_monty("print({x % 5 for x in [7, 3]})");
    assert_monty("s = set()\ns.add(1)\nfor x in s:\n    print(x)");
    assert_monty("s = {1, 2**31}\ns");
    assert_monty("s = frozenset([1, 2])\nresult = [x for x in s]");
    assert_monty("from collections import defaultdict\ng = defaultdict(set)\ng['a'].add(1)\ng");
}

#[test]
fn set_operations_on_dict_views_stay_monty() {
    // monty's dict-view operators follow dictobject.c (stop 37).
    assert_monty("a = {'x': 1}\nb = {'x': 2}\nlist(a.keys() & b.keys())");
    assert_monty("d = {'x': 1}\n[3, 1] | d.keys()");
    assert_monty("ks = {'x': 1}.keys()\nprint([3, 1] ^ ks)");
    assert_monty("d = {'x': 1}\nks = d.keys()\nprint(sorted(ks), len(ks) - 1)");
}

#[test]
fn set_used_only_order_free_stays_monty() {
    assert_monty(
        "seen = set()\nout = []\nfor x in [3, 1, 3]:\n    if x not in seen:\n        seen.add(x)\n        out.append(x)\nout",
    );
    assert_monty("sorted(set([3, 1, 3]))");
    assert_monty("len({1, 2}) + len(set('abc'))");
    assert_monty("s = {1, 2}\nt = {2}\n[s == t, t <= s, 1 in s, len(s), sorted(s), max(s)]");
    assert_monty("s = {1}\ns |= {2}\nif s:\n    print(len(s))");
    assert_monty("d = {'a': 1, **other}\nd");
    assert_monty("d = {}\nd");
    assert_monty("x = [i for i in range(3) if i in {1, 2}]");
}

#[test]
fn method_of_a_builtin_monty_lacks() {
    let says = "MISSING_METHODS";
    assert_cpython("'abc'.translate({97: 'A'})", "missing_method", says);
    assert_cpython("s = 'a {x}'\ns.format_map({'x': 1})", "missing_method", says);
}

#[test]
fn int_and_float_methods_stay_monty() {
    assert_monty("(255).bit_length()");
    assert_monty("x = 1.5\n[x.is_integer(), x.as_integer_ratio(), x.hex(), x.conjugate(), x.real, x.imag]");
    assert_monty(
        "n = 10\n[n.bit_count(), n.to_bytes(2, 'big'), n.is_integer(), n.numerator, n.denominator, n.real, n.imag]",
    );
    assert_monty("b = b'ab'\n[b.hex(), b.fromhex('00'), (1j).conjugate()]");
    assert_monty("x = 5\nhasattr(x, 'real')");
}

#[test]
fn method_the_script_defines_stays_monty() {
    assert_monty("class T:\n    def translate(self, x):\n        return x\n\nT().translate(1)");
    assert_monty("import math\nmath.sqrt(4)");
}

#[test]
fn builtin_method_read_as_a_value() {
    let says = "ATTRIBUTES_NOT_VALUES";
    assert_cpython("d = {'a': 2}\nmax(d, key=d.get)", "method_value", says);
    assert_cpython("out = []\nadd = out.append\nadd(1)", "method_value", says);
    assert_cpython("x = 3\nf = x.bit_length", "method_value", says);
    assert_cpython("x = 3\nhasattr(x, 'bit_length')", "builtin_attribute_lookup", "hasattr");
}

#[test]
fn what_monty_lacks_of_a_modules_types_goes_to_cpython() {
    assert_cpython(
        "from datetime import date\ndate(2024, 1, 2).toordinal()",
        "missing_method",
        "MISSING_METHODS",
    );
    assert_cpython(
        "import re\np = re.compile('(?P<a>x)')\np.groupindex",
        "method_value",
        "ATTRIBUTES_NOT_VALUES",
    );
    assert_cpython(
        "import re\np = re.compile('a')\nlist(map(p.match, ['a']))",
        "method_value",
        "ATTRIBUTES_NOT_VALUES",
    );
}

#[test]
fn a_types_own_attributes_stay_monty_however_imported() {
    assert_monty("from datetime import datetime, timezone\ndatetime.now(timezone.utc)");
    assert_monty("import datetime\ndatetime.datetime.now(datetime.timezone.utc)");
    assert_monty("from datetime import date\ndate.max");
}

#[test]
fn attributes_the_script_sets_stay_monty() {
    assert_monty("class R:\n    def __init__(self):\n        self.start = 1\n\nR().start");
    assert_monty("class P:\n    count: int = 0\n\nP().count");
    assert_monty("d = {'a': 1}\nd.get('a')");
}

#[test]
fn hasattr_or_getattr_of_what_may_be_a_builtins_method() {
    assert_cpython("hasattr('a', 'upper')", "builtin_attribute_lookup", "hasattr");
    assert_cpython("getattr(x, name)", "builtin_attribute_lookup", "hasattr");
    assert_monty("class A:\n    b = 1\n\ngetattr(A(), 'b')");
}

#[test]
fn strings_do_not_fire() {
    assert_monty(concat!(
        "a = 'yield import statistics'\n",
        "b = \"del x; str.upper\"\n",
        "c = '''\nimport statistics\nyield\n'''\n",
        "d = r'\\d+ yield'\n",
        "e = b'import io'\n",
        "g = rb\"del\"\n",
        "h = \"\"\"class A(B): pass\"\"\"\n",
        "i = 'it\\'s yield'\n",
        "j = u\"del\" 'yield'\n",
    ));
}

#[test]
fn comments_do_not_fire() {
    assert_monty("# import statistics\nx = 1  # yield del str.upper\n# class A(B):\n");
}

#[test]
fn fstring_text_does_not_fire() {
    assert_monty("name = 'x'\ns = f'yield {name!r:>10} del {{str.upper}} {name:{width}} {x:%Y-%m}'");
}

#[test]
fn fstring_fields_are_scanned() {
    assert_cpython("s = f'{str.upper(name)}'", "type_attribute", "`str.upper`");
    assert_cpython("s = f'''a\n{str.upper(x)}'''", "type_attribute", "(line 2)");
    assert_cpython(
        "s = f\"{', '.join(x)} {d['k']:{str.upper(w)}}\"",
        "type_attribute",
        "str.upper",
    );
}

#[test]
fn line_numbers_count_multiline_strings_and_continuations() {
    assert_cpython("x = '''\n\n'''\ny = 1 + \\\n    2\nimport io", "import", "(line 6)");
}

#[test]
fn typical_chain_stays_monty() {
    assert_monty(
        r#"import asyncio
import json
import math
import re
from collections import Counter

# Fetch the users, then their orders, concurrently.
users = await list_users(limit=10)
orders = await asyncio.gather(*[get_orders(u["id"]) for u in users["items"]])
totals = {u["name"]: sum(o["amount"] for o in os) for u, os in zip(users["items"], orders)}
best = max(totals, key=lambda n: totals[n])
words = Counter(w.lower() for w in re.findall(r"\w+", json.dumps(totals)))
if best:
    print(f"best: {best} with {totals[best]:.2f} ({math.sqrt(len(totals)):.1f})")
match users:
    case {"items": [first, *_]}:
        head = first
    case _:
        head = None
with open("/tmp/x") as f:
    pass
def helper(xs, *, scale=1.0):
    global best
    return [x * scale for x in xs if x]
report = {"best": best, "count": len(totals), "words": dict(words.most_common(3))}
report
"#,
    );
}

/// The `[differs]` entries of the corpus's known differences.
fn known_differences() -> Vec<String> {
    let text = std::fs::read_to_string("tests/corpus/known_differences.toml")
        .expect("run the test binary from the worktree root");
    let mut in_differs = false;
    let mut names = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_differs = line == "[differs]";
        } else if in_differs
            && !line.starts_with('#')
            && let Some((name, _)) = line.split_once('=')
        {
            names.push(name.trim().to_owned());
        }
    }
    names
}

fn corpus_cases() -> Vec<(String, String)> {
    let mut cases: Vec<(String, String)> = std::fs::read_dir("tests/corpus/cases")
        .expect("run the test binary from the worktree root")
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            if path.extension()? != "py" {
                return None;
            }
            let name = path.file_stem()?.to_str()?.to_owned();
            Some((name, std::fs::read_to_string(&path).ok()?))
        })
        .collect();
    cases.sort();
    cases
}

#[test]
fn corpus_known_differences_and_cpython_cases_route_to_cpython() {
    // A boundary rule of chainbox's command tools, what neither guest
    // does as 64-bit CPython (hash values), and messages CPython 3.14 (the
    // guest, and monty) words unlike the reference's 3.11: no route fixes these.
    // Differences from the 3.11 reference, not from the 3.14 guest.
    const NOT_INTERPRETER: &[&str] = &[
        "tool_result_content_blocks",
        "hash_of_values",
        "zero_division_messages",
        "keyword_typo_suggestions",
    ];
    let differs = known_differences();
    assert!(!differs.is_empty());
    let cases = corpus_cases();
    for name in &differs {
        assert!(cases.iter().any(|(case, _)| case == name), "no case file for {name}");
    }
    let mut misses = Vec::new();
    let mut others = Vec::new();
    for (name, script) in &cases {
        let must =
            (differs.contains(name) && !NOT_INTERPRETER.contains(&name.as_str())) || name.starts_with("cpython_");
        match (must, needs_cpython(script)) {
            (true, None) => misses.push(name.clone()),
            (false, Some(needs)) => others.push(format!("{name}: {needs}")),
            (true, Some(needs)) => eprintln!("  required  {name}: {needs}"),
            (false, None) => {}
        }
    }
    eprintln!("other corpus cases routed to CPython ({}):", others.len());
    for line in &others {
        eprintln!("  extra     {line}");
    }
    assert!(misses.is_empty(), "routed to monty but must run in CPython: {misses:?}");
}

#[test]
fn attributes_of_a_caught_exception_that_monty_lacks_go_to_cpython() {
    let says = "reads an attribute of a caught exception that monty's standard exceptions lack";
    let rule = "caught_exception_attribute";
    assert_cpython(
        "import json\ntry:\n    data = json.loads(text)\nexcept json.JSONDecodeError as err:\n    where = (err.lineno, err.colno, err.msg)",
        rule,
        says,
    );
    assert_cpython(
        "try:\n    run()\nexcept ValueError as e:\n    e.add_note('while parsing')\n    raise",
        rule,
        says,
    );
    assert_cpython(
        "try:\n    x = names[k]\nexcept NameError as e: missing = e.name",
        rule,
        says,
    );
    assert_cpython(
        "try:\n    run()\nexcept (KeyError, IndexError) as e:\n    if True:\n        n = getattr(e, 'x', 0) or e.obj",
        rule,
        says,
    );
}

#[test]
fn getattr_of_a_caught_exception_goes_to_cpython() {
    // `getattr` with a default answers silently on monty.
    let says = "reads an attribute of a caught exception that monty's standard exceptions lack";
    let rule = "caught_exception_attribute";
    assert_cpython(
        "try:\n    run()\nexcept ValueError as e:\n    pos = getattr(e, 'pos', None)",
        rule,
        says,
    );
    assert_cpython(
        "try:\n    run()\nexcept ValueError as e:\n    has = hasattr(e, 'lineno')",
        rule,
        says,
    );
}

#[test]
fn args_class_and_os_error_fields_of_a_caught_exception_stay_on_monty() {
    assert_monty("try:\n    run()\nexcept ValueError as e:\n    first = e.args[0]\n    kind = e.__class__.__name__");
    assert_monty("try:\n    run()\nexcept ValueError as e:\n    first = getattr(e, 'args', ())");
    assert_monty("try:\n    open(p)\nexcept OSError as e:\n    n = (e.errno, e.strerror, e.filename, e.filename2)");
    // A name a handler binds is taken for the exception everywhere: a loop
    // variable reusing it sends the script to CPython (slower, never wrong).
    assert_cpython(
        "try:\n    run()\nexcept ValueError as e:\n    pass\nfor e in entries:\n    print(e.msg)",
        "",
        "",
    );
    assert_monty("try:\n    run()\nexcept ValueError:\n    pass\nprint(e.msg)");
}

#[test]
fn a_caught_exception_shown_as_a_value_goes_to_cpython_where_monty_renames_it() {
    let says = "shows a caught exception other than by `str`";
    let rule = "renamed_exception_shown";
    let handler = |body: &str| format!("import json\ntry:\n    json.loads(text)\nexcept ValueError as e:\n    {body}");
    for body in [
        "errors.append(e)",
        "print(repr(e))",
        "print(f'{e!r}')",
        "print(f'{e=}')",
        "return {'error': e}",
        "print([e])",
        "failed = e",
    ] {
        assert_cpython(&handler(body), rule, says);
    }
    // The class of a frozen dataclass's error prints without its module.
    assert_cpython(
        "from dataclasses import dataclass\n@dataclass(frozen=True)\nclass P:\n    x: int\ntry:\n    P(1).x = 2\nexcept Exception as e:\n    print(str(type(e)))",
        rule,
        says,
    );
}

#[test]
fn a_caught_exception_shown_by_str_stays_on_monty() {
    let handler = |body: &str| format!("import json\ntry:\n    json.loads(text)\nexcept ValueError as e:\n    {body}");
    for body in [
        "print('not JSON:', e)",
        "errors.append(str(e))",
        "print(f'not JSON: {e}')",
        "kind = type(e).__name__",
        "same = type(e) is ValueError",
        "ok = isinstance(e, ValueError)",
        "raise RuntimeError('bad') from e",
        "raise e",
        "msg = str(e)[:80]",
    ] {
        assert_monty(&handler(body));
    }
    // Without a module whose exceptions monty renames, a repr is CPython's.
    assert_monty("try:\n    x = rows[0]\nexcept IndexError as e:\n    errors.append(e)\n    print(repr(e))");
    // `json.dumps` raises only builtin exceptions (TypeError, ValueError).
    assert_monty(
        "import json\ntry:\n    out = json.dumps(rows)\nexcept (TypeError, ValueError) as e:\n    errors.append(e)",
    );
}

#[test]
fn sys_setrecursionlimit_of_montys_test_build_goes_to_cpython() {
    let says = "uses `sys.setrecursionlimit`, which monty's `sys` does not have";
    assert_cpython("import sys\nsys.setrecursionlimit(5000)", "module_attribute", says);
    assert_cpython("from sys import setrecursionlimit", "import", says);
    assert_monty("import sys\nprint(sys.version_info, sys.maxsize)");
}

#[test]
fn path_read_text_and_write_text_with_arguments_go_to_cpython() {
    let says = "passes an encoding or other argument to `Path.read_text`/`write_text`";
    let rule = "path_text_arguments";
    assert_cpython("text = path.read_text(encoding='utf-8')", rule, says);
    assert_cpython("text = path.read_text('utf-8')", rule, says);
    assert_cpython("path.write_text(report, encoding='utf-8')", rule, says);
    assert_cpython("path.write_text(report, 'utf-8', 'strict')", rule, says);
    assert_monty("text = path.read_text()\npath.write_text(text.upper())");
}

#[test]
fn slots_and_private_names_go_to_cpython() {
    let rule = "class_rule_not_enforced";
    assert_cpython(
        "class Point:\n    __slots__ = ('x', 'y')\n    def __init__(self, x, y):\n        self.x = x\n        self.y = y",
        rule,
        "declares `__slots__`",
    );
    assert_cpython(
        "class Account:\n    def __init__(self, token):\n        self.__token = token\nprint(Account('t').__token)",
        rule,
        "uses a private name",
    );
    assert_monty(
        "class Account:\n    def __init__(self, token):\n        self._token = token\n    def __repr__(self):\n        return 'A'\nif __name__ == '__main__':\n    print(Account('t')._token)",
    );
}

/// The benchmarks' workloads measure monty: `auto` must keep them there.
#[test]
fn the_benchmark_workloads_run_on_monty() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers/workloads");
    for entry in std::fs::read_dir(&dir).expect("benches/peers/workloads") {
        let path = entry.expect("a workload").path();
        if path.extension().is_some_and(|e| e == "py") {
            let script = std::fs::read_to_string(&path).expect("a workload's script");
            assert_eq!(needs_cpython(&script), None, "{}", path.display());
        }
    }
}

#[test]
fn a_script_longer_than_the_scan_reads_goes_to_cpython_unread() {
    let script = "x = 1\n".repeat(MAX_SCANNED_BYTES / 6 + 1);
    assert_eq!(needs_cpython(&script), Some(Needs::TooLong));
}

/// Hostile shapes at the size bound: deep nesting must not overflow the
/// host's stack (the parse and the walk recurse), and no shape is slow.
#[test]
fn the_worst_scripts_the_scan_reads_are_scanned_quickly_and_safely() {
    let deep = |open: &str, close: &str| {
        let n = (MAX_SCANNED_BYTES - 8) / (open.len() + close.len());
        format!("x = {}1{}", open.repeat(n), close.repeat(n))
    };
    let scripts = [
        deep("(", ")"),
        deep("[", "]"),
        deep("-", ""),
        deep("f(", ")"),
        deep("a.", "b"),
        deep("1+", ""),
        deep("not ", ""),
        "for ".repeat(MAX_SCANNED_BYTES / 4),
        "x.y(".repeat(MAX_SCANNED_BYTES / 4),
        "if x:\n".chars().cycle().take(MAX_SCANNED_BYTES).collect(),
        (0..MAX_SCANNED_BYTES / 8)
            .map(|i| format!("{} if x:\n", " ".repeat(i % 100)))
            .collect::<String>()[..MAX_SCANNED_BYTES]
            .to_owned(),
    ];
    for script in scripts {
        let started = std::time::Instant::now();
        let _ = needs_cpython(&script);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{:?}...: {:?}",
            &script[..20],
            started.elapsed()
        );
    }
}

/// A tally of the keys that keep the scripts of `$CHAINBOX_KEYS_DIR` off
/// monty (a maintainer's tool for growing the allowlist; not a check).
#[test]
#[ignore = "a tool: CHAINBOX_KEYS_DIR=dir cargo test --lib python_choice::tests::tally -- --ignored --nocapture"]
fn tally_keys_off_the_allowlist() {
    let Ok(dir) = std::env::var("CHAINBOX_KEYS_DIR") else {
        return;
    };
    let mut tally: BTreeMap<String, usize> = BTreeMap::new();
    let mut contexts: BTreeMap<String, usize> = BTreeMap::new();
    for entry in std::fs::read_dir(dir).expect("a directory") {
        let script = std::fs::read_to_string(entry.expect("an entry").path()).expect("a script");
        for key in keys(&script).unwrap_or_default() {
            if allowlist().binary_search(&key.as_str()).is_err() {
                *tally.entry(key).or_default() += 1;
            }
        }
        if let Some(Needs::Context { what, .. }) = needs_cpython(&script) {
            *contexts.entry(what.to_owned()).or_default() += 1;
        }
    }
    let mut sorted: Vec<_> = tally.into_iter().collect();
    sorted.sort_by_key(|entry| std::cmp::Reverse(entry.1));
    for (key, n) in sorted {
        println!("{n:5} {key}");
    }
    for (what, n) in contexts {
        println!("{n:5} context: {what}");
    }
}

#[test]
fn copy_with_an_argument_is_paths_copy_and_goes_to_cpython() {
    assert!(matches!(
        needs_cpython("import pathlib\npathlib.Path('a').copy('b')"),
        Some(Needs::Context { .. })
    ));
    assert_monty("rows = [1]\nrows2 = rows.copy()");
}

/// What the scan finds in each script of `$CHAINBOX_KEYS_DIR` (a
/// maintainer's tool, as [`tally_keys_off_the_allowlist`]).
#[test]
#[ignore = "a tool: CHAINBOX_KEYS_DIR=dir cargo test --lib python_choice::tests::findings -- --ignored --nocapture"]
fn findings_of_each_script() {
    let Ok(dir) = std::env::var("CHAINBOX_KEYS_DIR") else {
        return;
    };
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .expect("a directory")
        .map(|e| e.expect("an entry").path())
        .collect();
    paths.sort();
    for path in paths {
        let script = std::fs::read_to_string(&path).expect("a script");
        let found = needs_cpython(&script).map_or_else(|| "monty".to_owned(), |needs| needs.to_string());
        println!(
            "{}: {found}",
            path.file_stem().and_then(|s| s.to_str()).unwrap_or_default()
        );
    }
}
