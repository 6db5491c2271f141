PRELUDE = "import csv\nclass W:\n    def __init__(self):\n        self.parts = []\n    def write(self, s):\n        self.parts.append(s)\n    def getvalue(self):\n        return ''.join(self.parts)\nclass io:\n    StringIO = W"
T = ["'a,b,c\\n1,2,3\\n'", "'a,\"b,c\",d\\r\\n'", "'\"x\"\"y\",z\\n'", "'a;b;c\\n'", "'a\\tb\\n'", "'\\n\\na,b\\n'", "' a , b \\n'", "'\"unterminated\\n'",
     "'a,b\\nc\\n'", "'x,\"multi\\nline\",y\\n'", "'k,v\\n1,\\n,2\\n'", "'\"a\" b,c\\n'", "'a\\\\,b,c\\n'", "''", "'only'", "'1,2\\r3,4\\r'"]
KW = ["", ", delimiter=';'", ", quotechar=\"'\"", ", skipinitialspace=True", ", escapechar='\\\\'", ", quoting=csv.QUOTE_NONE", ", quoting=csv.QUOTE_NONNUMERIC",
      ", doublequote=False, escapechar='\\\\'", ", strict=True", ", delimiter='\\t'", ", dialect='excel-tab'", ", quoting=csv.QUOTE_ALL", ", lineterminator='\\n'"]
ROWS = ["[['a', 'b,c', 'd\"e'], [1, 2.5, None]]", "[['x\\ny', ''], ['', '']]", "[[' lead', 'trail '], ['q\"', \"'\"]]", "[[1, True, 3.0]]", "[[]]", "[['a;b', 'c']]", "[['\\r'], ['#']]"]
H1 = ['\"ignore\"', '\"raise\"']
def expr(rng):
    k = rng.choice
    t, kw, rows = k(T), k(KW), k(ROWS)
    return k([
        f"list(csv.reader({t}.splitlines(True){kw}))",
        f"list(csv.reader({t}.splitlines(){kw}))",
        f"[dict(r) for r in csv.DictReader({t}.splitlines(True){kw})]",
        f"[dict(r) for r in csv.DictReader({t}.splitlines(True), fieldnames=['p', 'q']{kw})]",
        f"[dict(r) for r in csv.DictReader({t}.splitlines(True), restkey='rest', restval='-'{kw})]",
        f"(lambda b: (csv.writer(b{kw}).writerows({rows}), b.getvalue())[1])(io.StringIO())",
        f"(lambda b: (csv.writer(b{kw}).writerow(['a', 'b']), b.getvalue())[1])(io.StringIO())",
        f"(lambda b: (lambda w: (w.writeheader(), w.writerow({{'a': 1, 'b': 'x,y'}}), b.getvalue())[2])(csv.DictWriter(b, ['a', 'b']{kw})))(io.StringIO())",
        f"(lambda b: (lambda w: (w.writerow({{'a': 1, 'c': 2}}), b.getvalue())[1])(csv.DictWriter(b, ['a', 'b'], extrasaction={k(H1)})))(io.StringIO())",
        f"(lambda r: (next(r), r.line_num))(csv.reader({t}.splitlines(True)))",
        f"csv.Sniffer().has_header({t})", f"csv.Sniffer().sniff({t}).delimiter",
        f"sorted(csv.list_dialects())", f"csv.get_dialect('excel').delimiter", f"csv.QUOTE_MINIMAL, csv.QUOTE_STRINGS",
    ])
