import functools

# A retry decorator for async tool wrappers, keeping the wrapped function's name.
def retrying(attempts):
    def decorate(fn):
        @functools.wraps(fn)
        async def wrapper(*args):
            last = None
            for attempt in range(attempts):
                try:
                    return await fn(*args, attempt=attempt)
                except RuntimeError as e:
                    last = e
            raise last
        return wrapper
    return decorate

@retrying(3)
async def fetch_page(url, attempt=0):
    """Fetches one page of the docs site."""
    return await flaky_fetch(url, attempt=attempt)

page = await fetch_page("https://docs.example.com/start")
{"name": fetch_page.__name__, "doc": fetch_page.__doc__, "status": page["status"]}
