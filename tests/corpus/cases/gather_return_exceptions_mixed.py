import asyncio

# A fan-out that keeps going: the script's own coroutines and tool calls,
# some failing, gathered with return_exceptions (and nested gathers).


async def score(user_id):
    user = await get_user(user_id)
    if not user["active"]:
        raise ValueError(f"user {user_id} is inactive")
    return {"id": user_id, "name": user["name"].split()[0]}


async def lookup(key):
    table = {"a": 1, "b": 2}
    return table[key]


results = await asyncio.gather(
    get_weather("Atlantis"), fail("boom"), score(1), score(3), lookup("a"), lookup("zz"),
    return_exceptions=True,
)
summary = []
for r in results:
    if isinstance(r, BaseException):
        summary.append([type(r).__name__, str(r), repr(r)[:40], len(r.args), isinstance(r, Exception)])
    else:
        summary.append(r)

# A failing inner gather fills one slot of an outer one that returns exceptions.
inner = asyncio.gather(lookup("b"), lookup("missing"))
outer = await asyncio.gather(inner, lookup("a"), return_exceptions=1)
nested = [type(x).__name__ if isinstance(x, Exception) else x for x in outer]

# An inner gather that returns exceptions, inside one that does not.
mixed = await asyncio.gather(asyncio.gather(fail("inner"), echo("x"), return_exceptions=True), echo("y"))
mixed_view = [[type(x).__name__ if isinstance(x, Exception) else x for x in mixed[0]], mixed[1]]

# return_exceptions=False raises the first failure.
try:
    await asyncio.gather(lookup("a"), lookup("nope"), return_exceptions=False)
    raised = None
except KeyError as e:
    raised = ["KeyError", str(e)]

print(len(summary), nested, mixed_view)
{"summary": summary, "nested": nested, "mixed": mixed_view, "raised": raised}
