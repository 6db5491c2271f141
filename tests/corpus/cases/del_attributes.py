# `del obj.attr` on instances, classes and dataclasses, and `del obj[k]`
# through a class's `__delitem__`.
from dataclasses import dataclass


def attempt(label, fn):
    try:
        print(label, "ok", fn())
    except Exception as e:
        print(label, type(e).__name__, e)


class Session:
    timeout = 30

    def __init__(self):
        self.token = "abc"
        self.user = "ann"

    def close(self):
        return "closed"


s = Session()
del s.token
attempt("read", lambda: s.token)
print(s.user)


def drop_token(obj):
    del obj.token


def drop_close(obj):
    del obj.close


def drop_timeout(obj):
    del obj.timeout


attempt("again", lambda: drop_token(s))
attempt("method", lambda: drop_close(s))
attempt("class var via instance", lambda: drop_timeout(s))
s.timeout = 5
del s.timeout
print(s.timeout)
del Session.timeout
attempt("class var", lambda: Session.timeout)
attempt("class var again", lambda: drop_timeout(Session))


@dataclass
class Point:
    x: int
    y: int = 0


p = Point(1, 2)
del p.y
print(p.y, Point(3))


@dataclass(frozen=True)
class Frozen:
    token: str


attempt("frozen", lambda: drop_token(Frozen("t")))


class Registry:
    def __init__(self):
        self.items = {}

    def __setitem__(self, key, value):
        self.items[key] = value

    def __delitem__(self, key):
        print("removing", key)
        del self.items[key]


r = Registry()
r["a"] = 1
r["b"] = 2
del r["a"]
print(r.items)


def drop(obj, key):
    del obj[key]


attempt("registry missing", lambda: drop(r, "zz"))


class WriteOnly:
    def __setitem__(self, key, value):
        pass


class Plain:
    pass


attempt("setitem only", lambda: drop(WriteOnly(), 0))
attempt("plain", lambda: drop(Plain(), 0))
r.items
