"""The stdlib a chain can import: imported here, at build time, so it is in
the snapshot (in a componentize-py build, the only stdlib there is). The
package imports this module first."""

import importlib


# Modules imported at build time, so they are in the snapshot. A chain can
# import these (and whatever they import themselves). One that fails to
# import in this build is skipped.
PRELOADED_MODULES = (
    # data and text
    "json", "re", "string", "textwrap", "difflib", "unicodedata", "html",
    "html.parser", "csv", "io", "pprint", "reprlib", "base64", "binascii",
    "codecs", "struct", "array", "hashlib", "hmac", "secrets", "uuid",
    "zlib", "gzip", "shlex", "fnmatch", "glob", "tomllib", "email",
    "email.message", "email.utils", "xml.etree.ElementTree", "ipaddress",
    "urllib.parse", "keyword", "colorsys", "locale", "xml.dom.minidom",
    "mimetypes", "quopri", "pickle", "argparse",
    # numbers
    "math", "cmath", "statistics", "decimal", "fractions", "random",
    "numbers", "operator", "bisect", "heapq",
    # structure
    "collections", "collections.abc", "dataclasses", "enum", "typing",
    "types", "abc", "copy", "functools", "itertools", "contextlib",
    "graphlib", "weakref", "inspect", "ast", "string.templatelib",
    # time and dates
    "time", "datetime", "calendar", "zoneinfo",
    # files in the workspace
    "os", "os.path", "pathlib", "shutil", "tempfile", "sqlite3", "zipfile",
    "tarfile", "filecmp",
    # async
    "asyncio", "asyncio.runners", "asyncio.events", "asyncio.base_events",
    "queue", "contextvars", "sched",
    # diagnostics
    "warnings", "traceback", "linecache", "gc", "logging", "sys", "timeit",
)

# What the stdlib imports only inside a function, on first use: without
# these in the snapshot `datetime.strptime`, `"é".encode("utf-16")`,
# `codecs.encode(s, "rot13")`, `email.message_from_string` and minidom's
# `parseString` would fail at run time with ModuleNotFoundError or
# LookupError ("unknown encoding"). Found by importing every name of
# `sys.stdlib_module_names` in a chain and calling the usual functions.
LAZILY_IMPORTED_MODULES = (
    "_strptime", "_pylong", "stringprep", "email.parser", "email.feedparser",
    "email.policy", "email.generator", "email.headerregistry",
    "email.contentmanager", "email.mime.text", "email.mime.multipart",
    "importlib.resources", "xml.dom.expatbuilder", "xml.dom.pulldom",
    "configparser", "http", "getopt", "optparse", "platform",
)


def _codec_modules():
    """Every `encodings.<codec>` module of this build (looked up by name on
    a codec's first use)."""
    import encodings
    import os

    directory = os.path.dirname(encodings.__file__)
    names = sorted(f[:-3] for f in os.listdir(directory) if f.endswith(".py") and f != "__init__.py")
    return tuple(f"encodings.{name}" for name in names)


for _name in PRELOADED_MODULES + LAZILY_IMPORTED_MODULES + _codec_modules():
    try:
        importlib.import_module(_name)
    except Exception:  # not in this build (`encodings.mbcs`, `_bz2`): skipped
        pass
