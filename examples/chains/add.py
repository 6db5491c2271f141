# Three calls of the `add` command tool, one with positional arguments
# (mapped onto the schema's properties in order: a, b).
#
#   chainbox run examples/chains/add.py --tools examples/tools/manifest.toml --json
x = await add(1, 2)
y = await add(a=x, b=10)
z = await add(a=y, b=0.5)
{"x": x, "y": y, "z": z}
