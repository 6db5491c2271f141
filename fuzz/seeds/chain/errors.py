try:
    await fail(message="boom")
except RuntimeError as e:
    r = str(e)
try:
    await delete(path="/")
except PermissionError:
    r += "denied"
r