# CPython's math functions (and float ** float, complex abs and powers,
# random's distributions) take their last bits from the platform's C library,
# and repr shows every bit: the guests ask the host's library, the one native
# CPython on the same machine calls. These arguments are ones where musl
# (wasi-libc) and glibc disagree in the last place, and glibc's FMA and
# plain x86-64 variants agree (`exp(3.625)`, for one, depends on the CPU:
# GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-FMA shows it).
import math
import random


def haversine_km(lat1, lon1, lat2, lon2):
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * 6371.0088 * math.atan2(math.sqrt(a), math.sqrt(1 - a))


cities = {"Paris": (48.8566, 2.3522), "Berlin": (52.52, 13.405), "Madrid": (40.4168, -3.7038), "Oslo": (59.9139, 10.7522)}
names = sorted(cities)
distances = {f"{a}-{b}": haversine_km(*cities[a], *cities[b]) for a in names for b in names if a < b}

values = {
    "sin": math.sin(6.9), "cos": math.cos(8.3), "tan": math.tan(-1.875),
    "log10": math.log10(5.5998), "atan": math.atan(11.528221802513713), "sinh": math.sinh(-80.21631754709853),
    "cosh": math.cosh(0.4), "tanh": math.tanh(0.8336162769503781), "asin": math.asin(0.9676847689684203),
    "acos": math.acos(0.12599321742185587), "cbrt": math.cbrt(3.375), "erf": math.erf(-0.75),
    "erfc": math.erfc(0.8605125076107687), "atanh": math.atanh(0.31730376794371284),
    "atan2": math.atan2(3.625, 3.125), "gamma": math.gamma(-9.7236), "log": math.log(10**400, 7),
    "pow": 1.0123 ** 77.5, "complex_abs": abs(3.3 + 4.4j), "complex_pow": (1.5 + 0.5j) ** 2.5,
}

random.seed(2024)
draws = [random.gauss(0, 1), random.expovariate(1.5), random.normalvariate(10, 2), random.lognormvariate(0, 0.5),
         random.vonmisesvariate(1, 2), random.gammavariate(2.5, 1), random.betavariate(2, 3), random.weibullvariate(1, 1.5),
         random.paretovariate(3), random.triangular(1, 5, 2)]
print(sorted(distances.items(), key=lambda kv: kv[1])[0])
{"distances": distances, "values": values, "draws": draws}
