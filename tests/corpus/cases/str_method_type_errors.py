# A model passes tool data of the wrong type to str and bytes methods and
# prints what it caught: each TypeError's message is CPython's own.
# (`find()`/`count()`/`index()` are left out: CPython 3.11, the reference
# runner, words them `must be str, not int`, 3.14 `find() argument 1 must be
# str, not int`; tests/it/cpython.rs checks those on both guests.)
u = await get_user(1)
w = await get_weather("Paris")
msgs = []
attempts = [
    lambda: u["email"].split(w["humidity"]),
    lambda: u["email"].rsplit(u["id"], 1),
    lambda: u["name"].strip(w["humidity"]),
    lambda: u["name"].rstrip(w["temp"]),
    lambda: u["email"].replace(u["id"], "-"),
    lambda: u["email"].replace("@", u["id"]),
    lambda: u["email"].partition(u["id"]),
    lambda: u["name"].center(20, w["humidity"]),
    lambda: u["name"].ljust(20, "=-"),
    lambda: u["email"].removeprefix(u["id"]),
    lambda: u["email"].removesuffix(None),
    lambda: u["email"].startswith(("x", u["id"])),
    lambda: u["email"].startswith(("x", u["email"][:1], u["id"])),
    lambda: ", ".join([u["name"], u["id"]]),
    lambda: u["name"].strip("a", "b"),
    lambda: u["name"].split(" ", 1, maxsplit=2),
    lambda: u["email"].encode().split("@"),
    lambda: u["email"].encode().find(u["email"]),
    lambda: u["email"].encode().find(ord("@")),
    lambda: u["email"].encode().center(30, "*"),
    lambda: u["email"].encode() + u["email"],
    lambda: [u["id"]].index(u["id"], "0"),
    lambda: [u["id"]].pop(),
    lambda: {}.get(),
]
for attempt in attempts:
    try:
        msgs.append(repr(attempt()))
    except Exception as e:
        msgs.append(f"{type(e).__name__}: {e}")
for m in msgs:
    print(m)
len(msgs)
