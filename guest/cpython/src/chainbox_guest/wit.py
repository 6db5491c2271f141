"""The component's bindings: they exist only inside a componentize-py build;
natively (the tests) there is no `wit_world`, and a fake host is passed to
`run_chain`."""

try:
    import wit_world
    from wit_world.imports import host as _wit_host
except ImportError:
    wit_world = None
    _wit_host = None


