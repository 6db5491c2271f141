# Wrapping a tool error in the script's own exception, uncaught.
try:
    order = await get_order("O-9999")
except RuntimeError as e:
    raise LookupError(f"could not load order: {e}") from e
order
