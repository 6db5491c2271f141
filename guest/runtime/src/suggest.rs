//! CPython's hints for an uncaught `NameError`, as its traceback printer
//! (`traceback.TracebackException`, 3.14) adds them: `. Did you mean:
//! 'get_weather'?` for a name close to a tool's (chosen by
//! `monty::closest_name`, CPython's `_Py_CalculateSuggestions`), and `. Did
//! you forget to import 'json'?` for the name of a standard module.

/// CPython 3.14's `sys.stdlib_module_names`, sorted.
const STDLIB_MODULE_NAMES: &[&str] = &[
    "__future__",
    "_abc",
    "_aix_support",
    "_android_support",
    "_apple_support",
    "_ast",
    "_ast_unparse",
    "_asyncio",
    "_bisect",
    "_blake2",
    "_bz2",
    "_codecs",
    "_codecs_cn",
    "_codecs_hk",
    "_codecs_iso2022",
    "_codecs_jp",
    "_codecs_kr",
    "_codecs_tw",
    "_collections",
    "_collections_abc",
    "_colorize",
    "_compat_pickle",
    "_contextvars",
    "_csv",
    "_ctypes",
    "_curses",
    "_curses_panel",
    "_datetime",
    "_dbm",
    "_decimal",
    "_elementtree",
    "_frozen_importlib",
    "_frozen_importlib_external",
    "_functools",
    "_gdbm",
    "_hashlib",
    "_heapq",
    "_hmac",
    "_imp",
    "_interpchannels",
    "_interpqueues",
    "_interpreters",
    "_io",
    "_ios_support",
    "_json",
    "_locale",
    "_lsprof",
    "_lzma",
    "_markupbase",
    "_md5",
    "_multibytecodec",
    "_multiprocessing",
    "_opcode",
    "_opcode_metadata",
    "_operator",
    "_osx_support",
    "_overlapped",
    "_pickle",
    "_posixshmem",
    "_posixsubprocess",
    "_py_abc",
    "_py_warnings",
    "_pydatetime",
    "_pydecimal",
    "_pyio",
    "_pylong",
    "_pyrepl",
    "_queue",
    "_random",
    "_remote_debugging",
    "_scproxy",
    "_sha1",
    "_sha2",
    "_sha3",
    "_signal",
    "_sitebuiltins",
    "_socket",
    "_sqlite3",
    "_sre",
    "_ssl",
    "_stat",
    "_statistics",
    "_string",
    "_strptime",
    "_struct",
    "_suggestions",
    "_symtable",
    "_sysconfig",
    "_thread",
    "_threading_local",
    "_tkinter",
    "_tokenize",
    "_tracemalloc",
    "_types",
    "_typing",
    "_uuid",
    "_warnings",
    "_weakref",
    "_weakrefset",
    "_winapi",
    "_wmi",
    "_zoneinfo",
    "_zstd",
    "abc",
    "annotationlib",
    "antigravity",
    "argparse",
    "array",
    "ast",
    "asyncio",
    "atexit",
    "base64",
    "bdb",
    "binascii",
    "bisect",
    "builtins",
    "bz2",
    "cProfile",
    "calendar",
    "cmath",
    "cmd",
    "code",
    "codecs",
    "codeop",
    "collections",
    "colorsys",
    "compileall",
    "compression",
    "concurrent",
    "configparser",
    "contextlib",
    "contextvars",
    "copy",
    "copyreg",
    "csv",
    "ctypes",
    "curses",
    "dataclasses",
    "datetime",
    "dbm",
    "decimal",
    "difflib",
    "dis",
    "doctest",
    "email",
    "encodings",
    "ensurepip",
    "enum",
    "errno",
    "faulthandler",
    "fcntl",
    "filecmp",
    "fileinput",
    "fnmatch",
    "fractions",
    "ftplib",
    "functools",
    "gc",
    "genericpath",
    "getopt",
    "getpass",
    "gettext",
    "glob",
    "graphlib",
    "grp",
    "gzip",
    "hashlib",
    "heapq",
    "hmac",
    "html",
    "http",
    "idlelib",
    "imaplib",
    "importlib",
    "inspect",
    "io",
    "ipaddress",
    "itertools",
    "json",
    "keyword",
    "linecache",
    "locale",
    "logging",
    "lzma",
    "mailbox",
    "marshal",
    "math",
    "mimetypes",
    "mmap",
    "modulefinder",
    "msvcrt",
    "multiprocessing",
    "netrc",
    "nt",
    "ntpath",
    "nturl2path",
    "numbers",
    "opcode",
    "operator",
    "optparse",
    "os",
    "pathlib",
    "pdb",
    "pickle",
    "pickletools",
    "pkgutil",
    "platform",
    "plistlib",
    "poplib",
    "posix",
    "posixpath",
    "pprint",
    "profile",
    "pstats",
    "pty",
    "pwd",
    "py_compile",
    "pyclbr",
    "pydoc",
    "pydoc_data",
    "pyexpat",
    "queue",
    "quopri",
    "random",
    "re",
    "readline",
    "reprlib",
    "resource",
    "rlcompleter",
    "runpy",
    "sched",
    "secrets",
    "select",
    "selectors",
    "shelve",
    "shlex",
    "shutil",
    "signal",
    "site",
    "smtplib",
    "socket",
    "socketserver",
    "sqlite3",
    "sre_compile",
    "sre_constants",
    "sre_parse",
    "ssl",
    "stat",
    "statistics",
    "string",
    "stringprep",
    "struct",
    "subprocess",
    "symtable",
    "sys",
    "sysconfig",
    "syslog",
    "tabnanny",
    "tarfile",
    "tempfile",
    "termios",
    "textwrap",
    "this",
    "threading",
    "time",
    "timeit",
    "tkinter",
    "token",
    "tokenize",
    "tomllib",
    "trace",
    "traceback",
    "tracemalloc",
    "tty",
    "turtle",
    "turtledemo",
    "types",
    "typing",
    "unicodedata",
    "unittest",
    "urllib",
    "uuid",
    "venv",
    "warnings",
    "wave",
    "weakref",
    "webbrowser",
    "winreg",
    "winsound",
    "wsgiref",
    "xml",
    "xmlrpc",
    "zipapp",
    "zipfile",
    "zipimport",
    "zlib",
    "zoneinfo",
];

/// Whether `name` is a standard module's (`sys.stdlib_module_names`).
pub fn is_stdlib_module(name: &str) -> bool {
    STDLIB_MODULE_NAMES.binary_search(&name).is_ok()
}

#[cfg(test)]
mod tests {
    use super::{STDLIB_MODULE_NAMES, is_stdlib_module};
    use monty::closest_name;

    #[test]
    fn the_module_names_are_sorted() {
        assert!(STDLIB_MODULE_NAMES.windows(2).all(|w| w[0] < w[1]));
        assert!(is_stdlib_module("json") && is_stdlib_module("os") && is_stdlib_module("__future__"));
        assert!(!is_stdlib_module("numpy") && !is_stdlib_module("os.path"));
    }

    // monty's CPython "Did you mean" (`monty::closest_name`, a port of
    // `_Py_CalculateSuggestions`): each expectation is CPython 3.14's
    // (`_suggestions._generate_suggestions(candidates, name)` in the CPython
    // guest); monty's own unit tests cannot run in its vendored copy.
    #[test]
    fn suggests_what_cpython_suggests() {
        let tools = ["echo", "get_weather", "list_orders", "load_artifact"];
        assert_eq!(closest_name("ech", &tools), Some("echo"));
        assert_eq!(closest_name("get_wether", &tools), Some("get_weather"));
        assert_eq!(closest_name("Echo", &tools), Some("echo"));
        assert_eq!(closest_name("list_order", &tools), Some("list_orders"));
        assert_eq!(closest_name("prce", &["price"]), Some("price"));
        assert_eq!(closest_name("pirce", &["price", "prices"]), Some("price"));
        // Short names: one insertion is close enough.
        assert_eq!(closest_name("a", &["ab"]), Some("ab"));
        // The first of equally close candidates.
        assert_eq!(closest_name("ab", &["abc", "abd"]), Some("abc"));
    }

    #[test]
    fn suggests_nothing_when_nothing_is_close() {
        let tools = ["echo", "get_weather"];
        assert_eq!(closest_name("ehco", &tools), None);
        assert_eq!(closest_name("ECHO", &tools), None);
        assert_eq!(closest_name("delete_everything", &tools), None);
        assert_eq!(closest_name("echo", &["echo"]), None);
        assert_eq!(closest_name("x", &[]), None);
    }

    #[test]
    fn suggests_within_cpythons_limits() {
        let many: Vec<String> = (0..750).map(|i| format!("name{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(closest_name("name7", &many[..749]), Some("name0"));
        assert_eq!(closest_name("name7", &many), None);
        // Long names compare only what differs once their common ends are trimmed.
        let long = "a".repeat(50);
        let (x, y) = (format!("{long}x"), format!("{long}y"));
        assert_eq!(closest_name(&x, &[&y]), Some(y.as_str()));
        let (x, y) = (format!("x{}x", "b".repeat(41)), format!("y{}y", "c".repeat(41)));
        assert_eq!(closest_name(&x, &[&y]), None);
    }

    #[test]
    fn counts_bytes_as_cpython_does() {
        // 'é' is two bytes of UTF-8: two edits from 'e'.
        assert_eq!(closest_name("cafe", &["café"]), Some("café"));
        assert_eq!(closest_name("ab", &["aé"]), None);
    }
}
