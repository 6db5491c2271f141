PRELUDE = "from datetime import date, time, datetime, timedelta, timezone\nUTC = timezone.utc\nIST = timezone(timedelta(hours=5, minutes=30))\nPST = timezone(timedelta(hours=-8), 'PST')"
D = ["date(2024, 2, 29)", "date(1, 1, 1)", "date(9999, 12, 31)", "date(2023, 1, 1)", "date(2020, 12, 31)", "date(2021, 1, 3)", "date(2019, 12, 30)", "date.min", "date.max"]
DT = ["datetime(2024, 2, 29, 13, 5, 9, 123456)", "datetime(2024, 1, 1)", "datetime(2024, 3, 10, 2, 30, tzinfo=UTC)", "datetime(2000, 1, 1, 0, 0, 0, 1, IST)",
      "datetime(1999, 12, 31, 23, 59, 59, tzinfo=PST)", "datetime(9999, 12, 31, 23, 59, 59, 999999)", "datetime(1, 1, 1)", "datetime(2021, 1, 1, 12, 0, 0, 500000, UTC)",
      "datetime(2024, 2, 29, 0, 0, fold=1)", "datetime(2010, 6, 15, 23, 0, tzinfo=timezone(timedelta(seconds=-1)))", "datetime.min", "datetime.max"]
DTA = [x for x in DT if "UTC" in x or "IST" in x or "PST" in x or "seconds=-1" in x]
T = ["time()", "time(13, 5)", "time(23, 59, 59, 999999)", "time(1, 2, 3, 400)", "time(12, tzinfo=UTC)", "time(0, 0, 0, 1000)", "time(9, 30, tzinfo=PST)", "time(7, 8, 9, fold=1)"]
TD = ["timedelta(0)", "timedelta(days=1)", "timedelta(hours=-1)", "timedelta(microseconds=-1)", "timedelta(days=-1, seconds=1)", "timedelta(weeks=3, minutes=7.5)",
      "timedelta(seconds=0.0000005)", "timedelta(seconds=1.5e-6)", "timedelta(days=999999999)", "timedelta(milliseconds=1.25)", "timedelta(days=1.5, hours=0.1)",
      "timedelta(minutes=90)", "timedelta(seconds=-2.5)", "timedelta(microseconds=2.5)", "timedelta(microseconds=3.5)", "timedelta(days=-3, hours=25)", "timedelta.max", "timedelta.min"]
TZ = ["UTC", "IST", "PST", "timezone(timedelta(0))", "timezone(timedelta(minutes=-90))", "timezone(timedelta(seconds=61))", "timezone(timedelta(microseconds=1))",
      "timezone.min", "timezone.max", "timezone(timedelta(hours=3), 'Moscow')", "timezone(timedelta(0), 'UTC')", "timezone(-timedelta(hours=23, minutes=59))"]
BAD = ["date(2023, 2, 29)", "date(0, 1, 1)", "date(10000, 1, 1)", "date(2024, 13, 1)", "date(2024, 0, 5)", "time(24)", "time(0, 60)", "time(0, 0, 60)",
       "time(0, 0, 0, 1000000)", "datetime(2024, 1, 32)", "timedelta(days=1e9)", "timedelta(days=1000000000)", "date(2024.0, 1, 1)", "date('2024', 1, 1)",
       "time(fold=2)", "datetime(2024, 1, 1, hour=-1)", "timezone(timedelta(hours=24))", "timezone(1)", "timezone(timedelta(0), 5)", "date(2024, 1)",
       "datetime(2024, 1, 1, tzinfo=1)", "timedelta(1, 2, 3, 4, 5, 6, 7)", "timedelta(x=1)", "time(-1)", "date(2024, 2, 30)", "timedelta(float('nan'))",
       "timedelta(float('inf'))", "timedelta.max + timedelta(1)", "date.max + timedelta(1)", "date.min - timedelta(1)", "datetime.max + timedelta(microseconds=1)"]
ISO = ["'2024-02-29'", "'20240229'", "'2024-W09-4'", "'2024-02-29T13:05:09.123+05:30'", "'2024-02-29 13:05'", "'2024-02-29T13'", "'2024-02-29T13:05:09Z'",
       "'2024-02-29T24:00:00'", "'bad'", "'2024-02-29T13:05:09.1234567'", "'13:05:09.5'", "'T13:05'", "'13:05:09+00:00'", "'1305'", "'2024-2-29'", "''",
       "'2024-02-30'", "'2024-02-29T13:05:09-0800'", "'13:05:09.123456789'", "'2024-02-29T13:05:09,5'", "'2024-W53-1'", "'2024-060'", "'24:00'", "'13'"]
FMT = ["'%Y-%m-%d %H:%M:%S.%f'", "'%a %A %b %B'", "'%j %U %W'", "'%y|%d|%I %p'", "'%z|%Z'", "'%%'", "'%G-W%V-%u %w'", "'%c'", "'%x %X'", "'%H%M'",
       "'%Y'", "'x %f y'", "'%:z'", "''", "'%d/%m/%y'", "'%I:%M %p'", "'%B %d, %Y'", "'%Y-%m-%dT%H:%M:%S%z'"]
PARSE = [("'2024-02-29 13:05:09.000001'", "'%Y-%m-%d %H:%M:%S.%f'"), ("'29/Feb/2024'", "'%d/%b/%Y'"), ("'2024-02-30'", "'%Y-%m-%d'"),
         ("'12:00 PM'", "'%I:%M %p'"), ("'2024-01-01T00:00:00+0530'", "'%Y-%m-%dT%H:%M:%S%z'"), ("'2024 +05:30'", "'%Y %z'"), ("'2024 Z'", "'%Y %z'"),
         ("'2024 60'", "'%Y %j'"), ("'abc'", "'%Y'"), ("'2024-01-01x'", "'%Y-%m-%d'"), ("'2024-W01-1'", "'%G-W%V-%u'"), ("'1.5'", "'%S.%f'"),
         ("'69 1 1'", "'%y %m %d'"), ("'68 1 1'", "'%y %m %d'"), ("'Thursday March 7 2024'", "'%A %B %d %Y'"), ("'2024-1-2'", "'%Y-%m-%d'"),
         ("'  2024'", "'%Y'"), ("'2024 UTC'", "'%Y %Z'"), ("'12 AM'", "'%I %p'"), ("'2024 13'", "'%Y %I'"), ("'2024 5 2'", "'%Y %U %w'"), ("'10:61'", "'%H:%M'"),
         ("'2024-03-07 01:02:03 PM'", "'%Y-%m-%d %I:%M:%S %p'"), ("'2024-03-07 13'", "'%Y-%m-%d %H'"), ("'07.03.24 9:5'", "'%d.%m.%y %H:%M'"),
         ("'Thu, 07 Mar 2024 10:00:00 +0000'", "'%a, %d %b %Y %H:%M:%S %z'"), ("'2024-03-07T10:00:00.5Z'", "'%Y-%m-%dT%H:%M:%S.%f%z'"),
         ("'2024-03-07 10:00'", "'%Y-%m-%d %H:%M:%S'"), ("'2024/3/7 7:08:09'", "'%Y/%m/%d %H:%M:%S'"), ("'march 7 2024'", "'%B %d %Y'"), ("'2024-03-07 %'", "'%Y-%m-%d %%'")]
TS = ["'auto'", "'hours'", "'minutes'", "'seconds'", "'milliseconds'", "'microseconds'", "'bad'"]
NUM = ["2", "1.5", "0.1", "-3", "0", "1e-7", "1/3", "True", "2**40"]
def expr(rng):
    k = rng.choice
    d, x, t, td, td2, tz = k(D), k(DT), k(T), k(TD), k(TD), k(TZ)
    o = k(D + DT + T)
    pz = k(PARSE)
    return k([
        "{0}".format(k(BAD)), f"str({o})", f"repr({o})", f"{o}.isoformat()", f"{x}.isoformat(' ')", f"{x}.isoformat(timespec={k(TS)})",
        f"{t}.isoformat(timespec={k(TS)})", f"{o}.strftime({k(FMT)})", f"format({o}, {k(FMT)})", f"f'{{{o}:%Y}}'", f"{o}.replace(year=2023)",
        f"{o}.replace(day=31)", f"{x}.replace(tzinfo={tz})", f"{x}.replace(tzinfo=None)", f"{t}.replace(hour=25)", f"{o}.replace(microsecond=7)",
        f"({d}.weekday(), {d}.isoweekday(), {x}.weekday())", f"{d}.isocalendar()", f"tuple({x}.isocalendar())", f"{d} + {td}", f"{d} - {td}",
        f"{x} + {td}", f"{x} - {td}", f"{td} + {x}", f"{d} - {k(D)}", f"{x} - {k(DT)}", f"{x} < {k(DT)}", f"{x} == {k(DT)}", f"{d} == {k(DT)}",
        f"{d} < {k(DT)}", f"{t} < {k(T)}", f"{t} == {k(T)}", f"sorted([{d}, {k(D)}])", f"{td} * {k(NUM)}", f"{k(NUM)} * {td}", f"{td} / {k(NUM)}",
        f"{td} / {td2}", f"{td} // {td2}", f"{td} // {k(NUM)}", f"{td} % {td2}", f"divmod({td}, {td2})", f"-{td}", f"abs({td})", f"+{td}",
        f"{td}.total_seconds()", f"({td}.days, {td}.seconds, {td}.microseconds)", f"str({td})", f"repr({td})", f"{td} < {td2}", f"bool({td})",
        f"{td} == {k(NUM)}", f"{td} + {k(NUM)}", f"repr({tz})", f"str({tz})", f"{tz}.utcoffset(None)", f"{tz}.tzname(None)", f"{tz}.dst(None)",
        f"{tz} == {k(TZ)}", f"{x}.utcoffset()", f"{x}.tzname()", f"{x}.dst()", f"{t}.utcoffset()", f"{k(DTA)}.astimezone({tz})", f"{x}.timetz()",
        f"{k(DTA)}.astimezone({tz}).isoformat()", f"{x}.date()", f"{x}.time()", f"datetime.combine({d}, {t})", f"datetime.combine({d}, {t}, {tz})",
        f"{x}.timestamp() if {x}.tzinfo else None", f"{x}.timetuple()[:9]", f"{d}.timetuple()[:]", f"{x}.utctimetuple()[:]",
        f"date.fromisoformat({k(ISO)})", f"datetime.fromisoformat({k(ISO)})", f"time.fromisoformat({k(ISO)})",
        f"datetime.strptime({pz[0]}, {pz[1]})", f"datetime.strptime({pz[0]}, {pz[1]}).isoformat()", f"({o}.year, {o}.month, {o}.day)" if o not in T else f"({o}.hour, {o}.minute, {o}.second, {o}.microsecond, {o}.tzinfo, {o}.fold)",
        f"({d}.min, {d}.max, {d}.resolution)", f"(time.min, time.max, timedelta.resolution, datetime.resolution)", f"type({x} - {k(DT)}).__name__",
        f"isinstance({x}, date)", f"{d}.toordinal()", f"date.fromordinal({k(['1', '738945', '0', '3652060'])})", f"{x}.ctime()", f"{x} + {k(NUM)}",
    ])
