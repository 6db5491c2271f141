# Pure path arithmetic as CPython's PosixPath (monty turned `\` into a
# separator, `//a` into `/a`, `Path('')` into `''`, gave `.` a name and
# `..` a suffix, and wrote reprs without escaping). Sorting (3.14 compares
# the strings split at `/`, 3.11 the parts) and 3.14's messages are in
# tests/it/cpython.rs `pure_paths_sort_and_refuse_as_cpython_3_14`.
from pathlib import Path
paths = [Path("a\\b.txt"), Path("//srv/x"), Path("///srv/x"), Path(""), Path("."), Path(".."), Path("/"), Path("a/./b//c/"), Path("it's.md"), Path("dir/.hidden"), Path("x.tar.gz")]
rows = [(str(p), repr(p), p.name, p.suffix, p.stem, p.suffixes, p.parts, str(p.parent), p.is_absolute()) for p in paths]
extra = [Path("") == Path("."), str(Path("//") / "a/b"), str(Path("a") / "/abs"), str(Path(".").joinpath("k")),
         Path("/a") < Path("a"), str(Path("a/b.txt").with_suffix(".md")), str(Path("a/b.txt").with_stem("c")), str(Path("x.y").with_name("z")), f"{Path('')}"]
for bad in [lambda: Path("/").with_name("x"), lambda: Path("a").with_suffix("md"), lambda: Path("a").with_name("b/c"), lambda: Path(".").with_stem("s")]:
    try:
        bad()
    except ValueError as e:
        extra.append(type(e).__name__)
[rows, extra]
