# A model's helpers called wrongly: CPython names nested functions, lambdas
# and methods by their qualified name in argument errors, and answers
# `__name__`/`__qualname__` for every function a script holds.
def make_scorer(weight):
    def score(item, bonus):
        return item["value"] * weight + bonus
    return score


class Ledger:
    def add(self, amount, note=""):
        return amount

    def checker(self):
        def check(entry):
            return entry > 0
        return check


score = make_scorer(2)
errors = []
for call in [
    lambda: score({"value": 3}),
    lambda: score({"value": 3}, 1, 2),
    lambda: score({"value": 3}, bonus=1, extra=0),
    lambda: Ledger().add(),
    lambda: Ledger().add(1, "a", "b"),
    lambda: Ledger().add(1, amount=2),
    lambda: Ledger().checker()(),
    lambda: (lambda a, b: a)(1),
    lambda: make_scorer(),
]:
    try:
        call()
    except TypeError as e:
        errors.append(str(e))

names = {
    "score": (score.__name__, score.__qualname__),
    "method": (Ledger.add.__name__, Ledger.add.__qualname__),
    "bound": (Ledger().add.__name__, Ledger().add.__qualname__),
    "class": (Ledger.__name__, Ledger.__qualname__, type(Ledger()).__qualname__),
    "builtin": (len.__name__, sorted.__qualname__, type(3).__qualname__),
    "lambda": (lambda: 0).__qualname__,
}
{"errors": errors, "names": names}
