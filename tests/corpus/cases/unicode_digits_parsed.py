# Numbers from international text: int() and float() read any Unicode
# decimal digits and whitespace, as CPython does (complex() too); other
# characters fail.
cells = ["١٢٣", " ٤٥ ", "１２３", "٣.٥", "۱۲۳۴", "12\u2003", "½", "12a", "²"]
parsed = []
for cell in cells:
    try:
        parsed.append(int(cell))
    except ValueError as e:
        try:
            parsed.append(float(cell))
        except ValueError as e2:
            parsed.append(str(e2))
complexes = [str(complex(cell)) for cell in ["١٢٣", " ٤٥ ", "٣.٥+١j", "12\u2003"]]
{"parsed": parsed, "total": sum(x for x in parsed if isinstance(x, (int, float))), "complex": complexes}
