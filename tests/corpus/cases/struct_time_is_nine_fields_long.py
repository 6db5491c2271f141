# time.struct_time is a structseq: nine fields long, with the zone's name
# and offset read by attribute only.
import time

st = time.gmtime(86400 * 365 + 3661)
parsed = time.strptime("2024-01-05 10:30", "%Y-%m-%d %H:%M")
year, month, day, *rest = st
try:
    time.mktime(tuple(st) + (0, "UTC"))
    eleven = "accepted"
except TypeError as e:
    eleven = str(e)
{
    "len": len(st),
    "tuple": tuple(st),
    "parsed": list(parsed),
    "unpacked": [year, month, day, rest],
    "last": st[-1],
    "zone": [st.tm_zone, st.tm_gmtoff, parsed.tm_zone, parsed.tm_gmtoff, time.strftime("%Z", st)],
    "repr": repr(st),
    "equal": st == tuple(st),
    "back": time.strftime("%Y-%m-%d %H:%M:%S", st),
    "eleven": eleven,
}
