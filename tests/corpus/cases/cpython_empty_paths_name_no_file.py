# On the CPython guest too, an empty path names no file (WASI takes `''`
# for the directory itself): each call is FileNotFoundError ENOENT naming
# `''`, the predicates are False, `os.walk('')` walks nothing, and
# `os.makedirs('', exist_ok=True)` fails. (`errno` sends the script to the
# CPython guest; empty_paths_name_no_file is the monty side.)
import errno
import os

open("a.txt", "w").close()


def error_of(call, *args):
    try:
        return ["no error", call(*args)]
    except OSError as e:
        return [type(e).__name__, e.errno == errno.ENOENT, e.filename, e.filename2, str(e)]


calls = [os.listdir, os.scandir, os.stat, open, os.mkdir, os.remove, os.rmdir, os.chdir]
{
    "calls": [error_of(call, "") for call in calls],
    "open_for_writing": error_of(open, "", "w"),
    "renames": [error_of(os.rename, "", "b.txt"), error_of(os.replace, "a.txt", "")],
    "makedirs": error_of(os.makedirs, os.path.dirname("a.txt"), 0o777, True),
    "predicates": [os.path.exists(""), os.path.isdir(""), os.path.isfile(""), os.path.getsize("a.txt")],
    "walk": list(os.walk("")),
    "open_by_keyword": error_of(lambda: open(file="")),
    "listdir_default": os.listdir(),
}
