# One awaited call of a no-op host tool.
await noop()
