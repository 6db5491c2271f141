a = await add(a=1, b=2)
b = await echo(text="hi")
[a, b]