# Format specs CPython refuses in its own words: both grouping options
# (`Cannot specify both ',' and '_'.`), a width or precision past 64 bits
# (`Too many decimal digits in format string`, raised when the value formats,
# literal spec or not), and `bytes()` of a count past 64 bits.
out = []
for make in [
    lambda: format(1, ",_d"),
    lambda: format(1.5, "_,f"),
    lambda: format(1, "_,"),
    lambda: format(1, ",,"),
    lambda: f"{1:{',_'}^{2 * 3}}",
    lambda: f"{1:99999999999999999999d}",
    lambda: "{:>{}}".format(1j, 2**64),
    lambda: format(1, "9999999999999999999d"),
    lambda: format("ab", ".99999999999999999999"),
    lambda: format(2, ".3"),
    lambda: bytes(2**63),
    lambda: bytes(-(2**64)),
    lambda: bytes(-(2**63)),
    lambda: format(1234567, "_d") + format(1234567.25, ",.1f"),
]:
    try:
        out.append(make())
    except (ValueError, OverflowError) as e:
        out.append([type(e).__name__, str(e)])
out
