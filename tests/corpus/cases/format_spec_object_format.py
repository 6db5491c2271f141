# A padded report table where a row has a missing quantity (None) and a tag
# list: a width spec on a value with no `__format__` of its own is
# `object.__format__`'s TypeError (naming the type), an empty spec is str(),
# and a date applies its spec with strftime (`>12` is text there).
import datetime
rows = [
    {"name": "widget", "qty": 4, "price": 2.5, "tags": ["a", "b"]},
    {"name": "gadget", "qty": None, "price": 10.0, "tags": []},
    {"name": "doohickey", "qty": 12, "price": 0.75, "tags": None},
]
lines, problems = [], []
for r in rows:
    try:
        lines.append(f"{r['name']:<10}|{r['qty']:>4}|{r['price']:>7.2f}")
    except TypeError as e:
        problems.append(f"{r['name']}: {e}")
        lines.append(f"{r['name']:<10}|{str(r['qty']):>4}|{r['price']:>7.2f}")
    for spec in (">8", "", "d"):
        try:
            lines.append(format(r["tags"], spec))
        except (TypeError, ValueError) as e:
            problems.append(f"{type(e).__name__}: {e}")
width = ""
when = datetime.date(2024, 3, 9)
extra = [f"{None:}", f"{rows[0]['tags']:{width}}", "{:>6}".format(7), f"{when:>12}", f"{when:%d/%m}", format(True, ">5")]
for value in ((1, 2), {"k": 1}, datetime.timedelta(days=1), range(3), b"ab"):
    try:
        extra.append("{:>10}".format(value))
    except TypeError as e:
        problems.append(str(e))
{"lines": lines, "problems": problems, "extra": extra}
