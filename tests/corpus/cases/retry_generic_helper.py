# A generic retry helper that takes the tool itself as an argument.
async def with_retries(fn, *args, retries=3, **kwargs):
    errors = []
    for attempt in range(retries):
        try:
            return await fn(*args, attempt=attempt, **kwargs), errors
        except RuntimeError as e:
            errors.append(str(e))
    raise RuntimeError(f"all {retries} attempts failed: {errors[-1]}")

page, errs = await with_retries(flaky_fetch, "https://docs.example.com")
lookup, errs2 = await with_retries(rate_limited, key="gamma")
{"page": page["body"], "page_errors": len(errs), "lookup": lookup["value"], "lookup_errors": errs2}
