# Integer arithmetic a summary may hit: negative floor division, modulo, divmod, pow.
m = await get_metrics("billing", "2024-05-05")
e, r = m["errors"], m["requests"]
vals = {
    "neg_floordiv": -e // 7,
    "neg_mod": -e % 7,
    "divmod": divmod(r, 60),
    "pow_mod": pow(r, 3, 1000),
    "abs": abs(-r),
    "true_div": r / 8,
    "int_of_float": int(r / 3),
    "round_neg": round(-r / 7),
    "bool_sum": sum([True, True, False]),
    "big_mul": r * 10**20,
}
vals
