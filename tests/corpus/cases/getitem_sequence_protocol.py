# A small wrapper class with only `__getitem__`: CPython iterates it by
# index until IndexError, and `in` searches it the same way.
class Page:
    def __init__(self, items):
        self.items = items

    def __getitem__(self, i):
        return self.items[i]


page = Page(["a", "b", "c"])
out = [x.upper() for x in page]
{"list": list(page), "in": "b" in page, "not_in": "z" in page, "upper": out, "first": page[0]}
