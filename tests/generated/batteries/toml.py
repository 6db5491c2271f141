PRELUDE = "import tomllib"
DOCS = [
 'a = 1', 'a = 1_000', 'a = 0x1F', 'a = 0o17', 'a = 0b101', 'a = +inf', 'a = nan', 'a = -0.0', 'a = 1e10', 'a = 6.02e+23', 'a = 3.14',
 'a = "basic\\tstr \\u00e9 \\U0001F600"', "a = 'literal \\\\n'", 'a = """\\nmulti\\nline"""', "a = '''\\nraw\\nmulti'''", 'a = """line \\\n   continued"""',
 'a = true', 'a = 1979-05-27T07:32:00Z', 'a = 1979-05-27T00:32:00.999999-07:00', 'a = 1979-05-27T07:32:00', 'a = 1979-05-27', 'a = 07:32:00',
 'a = 1979-05-27 07:32:00Z', 'a = [1, 2, 3]', 'a = [[1, 2], ["a", "b"]]', 'a = [\\n 1,\\n 2,\\n]', 'a = {x = 1, y = {z = 2}}',
 '[t]\\nk = 1\\n[t.sub]\\nv = 2', '[[arr]]\\nx = 1\\n[[arr]]\\nx = 2', 'a.b.c = 1\\na.b.d = 2', '"quoted key" = 1\\n\'lit key\' = 2',
 'a = 1\\na = 2', 'a = ', 'a = 01', 'a = 1__0', '[t]\\n[t]', 'a = {x = 1,}', 'a = 1979-13-27', 'a = "unterminated', 'a = 0x', 'a = 1.', 'a = .5',
 '# comment only', '', 'a = 1 # trailing', 'a = [1, "mixed", 2.0]', 'a = 9223372036854775808', 'a = -9223372036854775808', 'a = 1979-05-27T07:32:60Z',
 'a = "\\x41"', 'a = 24:00:00', 'key with space = 1', '[a]\\nb = 1\\n[a.b]\\nc = 2', 'a = {b = 1}\\n[a]\\nc = 1', '[[a]]\\n[a.b]\\nc=1\\n[[a]]',
 'a = 1979-05-27T07:32:00.123+05:30', 'a = "\\uD800"', 'a = 1979-05-27T07:32Z', '  [ spaced . table ]  \\n x = 1', 'a = 0.1e-2', 'a = 1e',
]
def expr(rng):
    d = rng.choice(DOCS)
    form = rng.choice(["tomllib.loads('{d}')", "tomllib.loads('{d}', parse_float=str)", "(lambda v: [(k, type(x).__name__) for k, x in v.items()])(tomllib.loads('{d}'))"])
    return form.format(d=d.replace("'", "\\'"))
