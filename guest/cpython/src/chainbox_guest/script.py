"""Compiling the chain's script (reference.py's `compile_script`)."""

import ast

# The file name the script's code and frames carry: how tracebacks, warnings
# and errno renumbering tell the script's frames from everything else.
SCRIPT_FILENAME = "main.py"
ANSWER = "__chain_answer__"  # the name reference.py's compile_script assigns


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
