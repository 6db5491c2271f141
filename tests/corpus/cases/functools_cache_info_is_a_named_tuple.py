# functools' CacheInfo is a collections.namedtuple (_asdict, _fields,
# _replace), and the cache wrapper carries the function's name.
import functools


def area(r):
    return 3 * r * r


cached = functools.lru_cache(maxsize=2)(area)
for r in [1, 2, 1, 3, 3, 2]:
    cached(r)
info = cached.cache_info()
plain = functools.cache(abs)
plain(-1)
{
    "info": info._asdict(),
    "fields": info._fields,
    "replaced": info._replace(hits=0),
    "type": type(info).__name__,
    "tuple": tuple(info),
    "names": [cached.__name__, cached.__qualname__, plain.__name__],
    "plain": plain.cache_info()._asdict(),
}
