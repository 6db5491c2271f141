"""Compiling the chain's script (reference.py's `compile_script`), and the
file names the script's code carries."""

import ast

# The file name the script's code and frames carry: how tracebacks, warnings
# and errno renumbering tell the script's frames from everything else.
SCRIPT_FILENAME = "main.py"
# In a session (`RunRequest.cells` not empty), cell k's file name instead,
# k counted from 0 and the new cell the last: the names Python's REPL (and
# monty's) gives its inputs, so a traceback through a function an earlier
# cell defined shows that cell's line.
CELL_FILENAME_PREFIX = "<python-input-"
ANSWER = "__chain_answer__"  # the name reference.py's compile_script assigns


def cell_filename(index):
    """The file name of a session's cell `index` (see `CELL_FILENAME_PREFIX`)."""
    return f"{CELL_FILENAME_PREFIX}{index}>"


def is_script_file(name):
    """Whether code of file `name` is the script's: a chain's `main.py`, or
    any cell of a session."""
    return name == SCRIPT_FILENAME or name.startswith(CELL_FILENAME_PREFIX)


def compile_script(source, filename=SCRIPT_FILENAME):
    """The script as a code object whose last statement, if an expression,
    assigns the chain's answer; top-level `await` allowed."""
    tree = ast.parse(source, filename)
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        # Each new node gets the expression's location (not a walk of the
        # whole tree with `ast.fix_missing_locations`: a third of a trivial
        # chain's guest time).
        target = ast.copy_location(ast.Name(ANSWER, ast.Store()), last)
        tree.body[-1] = ast.copy_location(ast.Assign(targets=[target], value=last.value), last)
    return compile(tree, filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
