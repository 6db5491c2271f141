# str.format and %-formatting, as older-style model code writes them.
rates = await get_exchange_rates("USD")
lines = []
for code, rate in rates["rates"].items():
    lines.append("{:<4} {:>10.4f} {:>12}".format(code, rate, format(1000 * rate, ",.2f")))
header = "%-4s %10s %12s" % ("cur", "rate", "per 1000")
report = header + "\n" + "\n".join(lines)
print(report)
"{0} rates from {1}, {n} lines".format(len(lines), rates["base"], n=len(lines) + 1)
