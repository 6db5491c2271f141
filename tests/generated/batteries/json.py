PRELUDE = "import json"
# Values a script hands to json.dumps: tool results, keys of every type,
# floats at the repr's edges, big ints, text past ASCII.
V = ["{}", "[]", "{'b': 1, 'a': [1, 2.5, None, True]}", "[1, [2, [3, []]], {}]", "{1: 'int', 2.5: 'float', True: 'bool', None: 'none'}",
     "{'k': (1, 2)}", "1e16", "1.0", "-0.0", "float('nan')", "float('inf')", "-float('inf')", "10**30", "-2**63", "0.1 + 0.2", "1e-7", "123456789.123",
     "'é😀\\n\\t\"\\\\'", "'\\x00\\x1f\\x7f'", "'\\ud800'", "{'z': 1, 'a': 2, 'm': {'y': 1, 'b': 2}}", "{(1, 2): 3}", "[1.5e300 * 1e10]", "5e-324",
     "{'a': float('nan')}", "[[], {}, '', 0, False]", "{'x': {'y': {'z': [1, {'w': None}]}}}", "{3: 1, '3': 2}", "{b'k': 1}", "object()", "{1, 2}",
     "b'bytes'", "2**53 + 1", "1.7976931348623157e308", "[1e22, 1e21, 1e-5, 1.5e-5]", "True", "None", "'plain'"]
IND = ["None", "0", "2", "'\\t'", "'--'", "-1", "''", "1.5"]
SEP = ["(',', ':')", "(', ', ': ')", "(';', '=')", "None"]
# Texts a script hands to json.loads: tool output, hand-written JSON, broken JSON.
T = ['\'{"a": 1, "b": [1, 2.0, null, true, false]}\'', '\'[1, 2, 3]\'', '\'"str\\\\u00e9\\\\ud83d\\\\ude00"\'', '\'1e400\'', '\'-1e400\'', '\'-0\'', '\'-0.0\'',
     '\'12345678901234567890123\'', '\'1.0000000000000000001\'', '\'NaN\'', '\'Infinity\'', '\'-Infinity\'', '\'nan\'', '\'{"a": 1, "a": 2}\'',
     '\'  {"x" : [ ] }  \'', '\'{"a": 1,}\'', '\'[1, 2,]\'', '\'{a: 1}\'', '"{\'a\': 1}"', '\'\'', '\'   \'', '\'[1] [2]\'', '\'{"a": 1} x\'',
     '\'"unterminated\'', '\'"bad \\\\x escape"\'', '\'"ctl \\n char"\'', '\'01\'', '\'1.\'', '\'.5\'', '\'+1\'', '\'tru\'', '\'[\'', '\'{"a"\'', '\'{"a":\'',
     '\'"\\\\ud800"\'', '\'"\\\\u12"\'', '\'[[[[[]]]]]\'', '\'{"b": 2, "a": 1}\'', '\'1E5\'', '\'1e-5\'', '\'0.1\'', '\'123.456e-2\'', '\'true\'', '\'null\'',
     '\'\\ufeff[1]\'', '\'"\\u00e9"\'', '\'{"\\u00e9": "\\u00e9"}\'', '\'[1, 2]\\n\'', '\'{"a":\\n 1,\\n "b" 2}\'', '\'9\' * 5000']
def expr(rng):
    k = rng.choice
    v, t = k(V), k(T)
    return k([
        f"json.dumps({v})", f"json.dumps({v}, indent={k(IND)})", f"json.dumps({v}, separators={k(SEP)})", f"json.dumps({v}, sort_keys=True)",
        f"json.dumps({v}, ensure_ascii=False)", f"json.dumps({v}, allow_nan=False)", f"json.dumps({v}, skipkeys=True)", f"json.dumps({v}, default=str)",
        f"json.dumps({v}, default=repr, sort_keys=True, indent=1)", f"json.dumps({v}, check_circular=False)", f"json.dumps({v}, indent={k(IND)}, separators={k(SEP)})",
        f"json.loads(json.dumps({v}))", f"json.loads(json.dumps({v}, indent=2)) == json.loads(json.dumps({v}))",
        f"json.loads({t})", f"json.loads({t}, parse_float=str)", f"json.loads({t}, parse_int=float)", f"json.loads({t}, parse_constant=repr)",
        f"json.loads({t}, object_pairs_hook=list)", f"json.loads({t}, object_hook=sorted)", f"json.loads({t}, strict=False)", f"json.loads({t}.encode())",
        f"(lambda e: (e.msg, e.pos, e.lineno, e.colno))(json.JSONDecodeError('m', {t}, 1))",
        f"[type(x).__name__ for x in json.loads('[1, 1.0, 1e2, -0, \"s\", null, {{}}]')]",
        f"json.loads({t}) if isinstance(json.loads({t}), dict) else type(json.loads({t})).__name__",
        f"json.dumps(json.loads({t}))", f"json.dumps(json.loads({t}), indent=2, sort_keys=True)",
        f"json.JSONDecoder().raw_decode({t})", f"json.JSONEncoder(sort_keys=True).encode({v})", f"list(json.JSONEncoder().iterencode({v}))[:5]",
        f"str(json.JSONDecodeError('msg', {t}, 0))", f"json.dumps({v}, indent={k(IND)}, ensure_ascii=False, sort_keys=True)",
    ])
