PRELUDE = "import os\nfrom pathlib import Path"
# Path strings a script builds from tool results: relative and absolute,
# dotted, doubled slashes, trailing slashes, hidden files, several suffixes.
P = ["''", "'.'", "'..'", "'/'", "'//'", "'///x'", "'a'", "'a/'", "'/a/b/c.txt'", "'a/b/../c'", "'./a/./b'", "'a//b'", "'/workspace/data.csv'",
     "'archive.tar.gz'", "'.bashrc'", "'dir/.hidden.txt'", "'a/b/c/'", "'../x/y'", "'/a/../../b'", "'name.'", "'a.b.c/d'", "'é/ü.txt'", "'a b/c d.md'",
     "'/workspace/reports/2024/q1.json'", "'x/y/z.py'", "'~/notes'", "'a\\\\b.txt'"]
S = ["'.txt'", "''", "'.md'", "'.tar.gz'", "'txt'", "'.'"]
G = ["'*.txt'", "'a/*'", "'**/*.py'", "'*/c.txt'", "'/a/*/c.txt'", "'[ab]*'", "'?.py'", "'*'"]
def expr(rng):
    k = rng.choice
    p, q, s, g = k(P), k(P), k(S), k(G)
    return k([
        f"os.path.join({p}, {q})", f"os.path.split({p})", f"os.path.splitext({p})", f"os.path.basename({p})", f"os.path.dirname({p})",
        f"os.path.normpath({p})", f"os.path.isabs({p})", f"os.path.relpath({p}, {q})", f"os.path.commonpath([{p}, {q}])", f"os.path.commonprefix([{p}, {q}])",
        f"os.path.join({p}, {q}, 'z')", f"os.path.expanduser({p}).startswith('~')", f"os.path.splitdrive({p})", f"os.path.normcase({p})", f"os.sep + os.path.sep",
        f"Path({p}).name", f"Path({p}).suffix", f"Path({p}).suffixes", f"Path({p}).stem", f"str(Path({p}).parent)", f"[str(x) for x in Path({p}).parents]",
        f"Path({p}).parts", f"str(Path({p}).with_suffix({s}))", f"str(Path({p}).with_name('n.x'))", f"str(Path({p}) / {q})", f"str(Path({p}).joinpath({q}, 'k'))",
        f"str(Path({p}).relative_to({q}))", f"Path({p}).is_relative_to({q})", f"Path({p}).match({g})", f"Path({p}).as_posix()", f"repr(Path({p}))",
        f"Path({p}) == Path({q})", f"Path({p}) < Path({q})", f"sorted([Path({p}), Path({q})])", f"Path({p}).is_absolute()", f"str(Path({p}).with_stem('s'))",
        f"Path({p}).root", f"Path({p}).anchor", f"Path({p}).full_match({g})", f"hash(Path({p})) == hash(Path({q}))", f"f'{{Path({p})}}'", f"Path({p}).suffix == {s}",
    ])
