# 100 sequential awaited calls of a no-op host tool: per-call overhead.
for i in range(100):
    await noop()
"done"
