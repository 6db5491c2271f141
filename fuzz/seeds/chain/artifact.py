h = await big(n=5000)
v = load_artifact(h)
len(v)