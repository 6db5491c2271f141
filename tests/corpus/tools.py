#!/usr/bin/env python3
"""The corpus's fake tools, defined once and used two ways.

- chainbox runs this file as a command tool (`tools.toml`): it reads
  `{"name": ..., "arguments": {...}}` on stdin, prints the JSON result on
  stdout and exits 0, or prints the error message on stderr and exits 1
  (a tool error: `RuntimeError(message)` in the script).
- `reference.py` imports it and calls `call(name, arguments)` in-process.

Every tool is a pure function of its arguments: no state across calls, no
clock, no randomness. A "flaky" tool fails while `attempt < 2`; pagination is
by `page` or `cursor` argument. Every result stays well under chainbox's
default `max_inline_result_bytes` (4096), so no result is offloaded.
"""
import json
import sys
import time
import zlib


class ToolError(Exception):
    """A tool failure: its message is what the script's RuntimeError says."""


def _checksum(*parts):
    return zlib.crc32("|".join(str(p) for p in parts).encode()) % 100000


# --- data -------------------------------------------------------------------

USERS = {
    1: {"id": 1, "name": "Ada Lovelace", "email": "ada@example.com", "team": "research", "active": True, "joined": "2021-03-14"},
    2: {"id": 2, "name": "Grace Hopper", "email": "grace@example.com", "team": "platform", "active": True, "joined": "2020-11-02"},
    3: {"id": 3, "name": "Alan Turing", "email": "alan@example.com", "team": "research", "active": False, "joined": "2019-06-23"},
    4: {"id": 4, "name": "Edsger Dijkstra", "email": "edsger@example.com", "team": "platform", "active": True, "joined": "2022-01-10"},
    5: {"id": 5, "name": "Barbara Liskov", "email": "barbara@example.com", "team": "design", "active": True, "joined": "2023-08-01"},
    6: {"id": 6, "name": "Donald Knuth", "email": "don@example.com", "team": "research", "active": True, "joined": "2018-02-28"},
    7: {"id": 7, "name": "Margaret Hamilton", "email": "margaret@example.com", "team": "platform", "active": False, "joined": "2017-07-20"},
    8: {"id": 8, "name": "Ken Thompson", "email": "ken@example.com", "team": "design", "active": True, "joined": "2024-04-04"},
}

WEATHER = {
    "Paris": {"temp_c": 18.5, "conditions": "cloudy", "humidity": 71, "wind_kph": 12},
    "Tokyo": {"temp_c": 24.0, "conditions": "sunny", "humidity": 60, "wind_kph": 8},
    "Lima": {"temp_c": 19.2, "conditions": "fog", "humidity": 88, "wind_kph": 5},
    "Oslo": {"temp_c": 7.8, "conditions": "rain", "humidity": 93, "wind_kph": 21},
    "Cairo": {"temp_c": 33.1, "conditions": "sunny", "humidity": 20, "wind_kph": 15},
    "Nairobi": {"temp_c": 22.4, "conditions": "cloudy", "humidity": 55, "wind_kph": 11},
    "São Paulo": {"temp_c": 26.7, "conditions": "storm", "humidity": 80, "wind_kph": 30},
}

STOCKS = {
    "ACME": {"price": 123.45, "currency": "USD", "change_pct": 1.25},
    "GLOBX": {"price": 87.1, "currency": "USD", "change_pct": -0.4},
    "INITECH": {"price": 9.99, "currency": "USD", "change_pct": -3.5},
    "UMBRL": {"price": 410.0, "currency": "EUR", "change_pct": 0.0},
    "WAYNE": {"price": 1502.75, "currency": "USD", "change_pct": 2.1},
}

# Rates to USD; deliberately not in alphabetical order.
RATES = {"USD": 1.0, "EUR": 0.92, "JPY": 151.3, "GBP": 0.79, "CHF": 0.88, "BRL": 5.05}

_TOPICS = ["billing", "auth", "deploy", "billing", "search", "auth", "billing", "deploy", "search", "auth"]
DOCS = [
    {"id": f"doc-{i:02d}", "title": f"{_TOPICS[i % len(_TOPICS)].title()} guide part {i}", "topic": _TOPICS[i % len(_TOPICS)], "words": 120 + (i * 37) % 500}
    for i in range(1, 24)
]

ORDERS = {
    "C100": [
        {"order_id": "O-1001", "amount": 25.5, "currency": "USD", "status": "shipped", "items": 2},
        {"order_id": "O-1002", "amount": 120.0, "currency": "USD", "status": "delivered", "items": 5},
        {"order_id": "O-1003", "amount": 8.99, "currency": "USD", "status": "cancelled", "items": 1},
        {"order_id": "O-1004", "amount": 64.25, "currency": "EUR", "status": "delivered", "items": 3},
        {"order_id": "O-1005", "amount": 310.0, "currency": "USD", "status": "pending", "items": 9},
        {"order_id": "O-1006", "amount": 15.0, "currency": "GBP", "status": "delivered", "items": 1},
        {"order_id": "O-1007", "amount": 42.0, "currency": "USD", "status": "shipped", "items": 2},
    ],
    "C200": [
        {"order_id": "O-2001", "amount": 99.99, "currency": "USD", "status": "delivered", "items": 4},
        {"order_id": "O-2002", "amount": 5.0, "currency": "USD", "status": "refunded", "items": 1},
    ],
    "C300": [],
}

FILES = {
    "/reports/2024-q1.csv": "region,revenue,units\nnorth,1200.50,30\nsouth,980.00,25\neast,1500.25,41\nwest,700.75,12\n",
    "/reports/2024-q2.csv": "region,revenue,units\nnorth,1350.00,33\nsouth,1010.10,27\neast,1420.00,39\nwest,810.40,15\n",
    "/reports/notes.txt": "Q2 was better in the north and west.\nEast dipped slightly.\n",
    "/config/app.json": '{"zeta_mode": true, "retries": 3, "alpha_threshold": 0.75, "name": "chainbox-demo"}',
    "/logs/app.log": "2024-05-01T10:00:00 INFO start\n2024-05-01T10:00:05 WARN slow query 812ms\n2024-05-01T10:01:00 ERROR db timeout\n2024-05-01T10:02:30 INFO recovered\n2024-05-01T10:03:00 ERROR cache miss storm\n2024-05-01T10:04:00 WARN slow query 1503ms\n",
}

INVENTORY = {
    "SKU-RED": {"zeta_warehouse": 4, "austin": 0, "berlin": 17},
    "SKU-BLUE": {"osaka": 12, "austin": 3},
    "SKU-GREEN": {},
}

TRANSLATIONS = {
    ("hello", "fr"): "bonjour",
    ("hello", "es"): "hola",
    ("hello", "de"): "hallo",
    ("thank you", "fr"): "merci",
    ("thank you", "es"): "gracias",
    ("thank you", "de"): "danke",
    ("goodbye", "fr"): "au revoir",
    ("goodbye", "es"): "adiós",
    ("goodbye", "de"): "tschüss",
}

# --- tools ------------------------------------------------------------------


def get_weather(city, units="metric"):
    if city not in WEATHER:
        raise ToolError(f"unknown city: {city}")
    w = WEATHER[city]
    temp = w["temp_c"] if units == "metric" else round(w["temp_c"] * 9 / 5 + 32, 1)
    return {"city": city, "temp": temp, "units": units, "conditions": w["conditions"], "humidity": w["humidity"], "wind_kph": w["wind_kph"]}


def get_forecast(city, days=3):
    if city not in WEATHER:
        raise ToolError(f"unknown city: {city}")
    if days < 1 or days > 7:
        raise ToolError(f"days must be between 1 and 7, got {days}")
    base = WEATHER[city]["temp_c"]
    out = []
    for d in range(1, days + 1):
        swing = (_checksum(city, d) % 70) / 10 - 3.5
        out.append({"day": d, "high": round(base + swing + 3, 1), "low": round(base + swing - 4, 1), "rain_mm": _checksum(city, "rain", d) % 12})
    return {"city": city, "days": out}


def get_user(user_id):
    if user_id not in USERS:
        raise ToolError(f"user {user_id} not found")
    return dict(USERS[user_id])


def list_users(team=None, page=1):
    users = [u for u in USERS.values() if team is None or u["team"] == team]
    size = 3
    chunk = users[(page - 1) * size : page * size]
    return {"users": [{"id": u["id"], "name": u["name"]} for u in chunk], "page": page, "has_more": page * size < len(users)}


def search_docs(query, page=1, page_size=5):
    if not query.strip():
        raise ToolError("query must not be empty")
    if page < 1:
        raise ToolError(f"invalid page: {page}")
    hits = [d for d in DOCS if query.lower() in d["topic"] or query.lower() in d["title"].lower() or query == "*"]
    start = (page - 1) * page_size
    chunk = hits[start : start + page_size]
    results = [{"id": d["id"], "title": d["title"], "score": round(1 - (start + i) * 0.03, 2), "words": d["words"]} for i, d in enumerate(chunk)]
    return {
        "query": query,
        "page": page,
        "results": results,
        "next_page": page + 1 if start + page_size < len(hits) else None,
        "total": len(hits),
    }


def list_orders(customer_id, cursor=None):
    if customer_id not in ORDERS:
        raise ToolError(f"no such customer: {customer_id}")
    orders = ORDERS[customer_id]
    start = 0 if cursor is None else int(cursor.removeprefix("cur_"))
    size = 3
    chunk = orders[start : start + size]
    nxt = f"cur_{start + size}" if start + size < len(orders) else None
    return {"orders": chunk, "next_cursor": nxt}


def get_order(order_id):
    for orders in ORDERS.values():
        for o in orders:
            if o["order_id"] == order_id:
                return dict(o, lines=[{"sku": f"SKU-{_checksum(order_id, i) % 900 + 100}", "qty": i + 1} for i in range(min(o["items"], 3))])
    raise ToolError(f"order {order_id} not found")


def flaky_fetch(url, attempt=0):
    if attempt < 2:
        raise ToolError(f"503 Service Unavailable: {url} (attempt {attempt})")
    return {"url": url, "status": 200, "body": f"<html>content of {url}</html>", "bytes": 24 + len(url)}


def get_stock_price(symbol):
    s = symbol.upper()
    if s not in STOCKS:
        raise ToolError(f"unknown symbol {symbol!r}")
    return {"symbol": s, **STOCKS[s]}


def get_exchange_rates(base="USD"):
    if base not in RATES:
        raise ToolError(f"unsupported base currency: {base}")
    b = RATES[base]
    return {"base": base, "rates": {k: round(v / b, 4) for k, v in RATES.items() if k != base}}


def convert_currency(amount, from_currency, to_currency):
    for c in (from_currency, to_currency):
        if c not in RATES:
            raise ToolError(f"unsupported currency: {c}")
    rate = RATES[to_currency] / RATES[from_currency]
    return {"amount": round(amount * rate, 2), "currency": to_currency, "rate": round(rate, 6)}


def send_email(to, subject, body=""):
    if "@" not in to:
        raise ToolError(f"invalid recipient address: {to}")
    return {"sent": True, "message_id": f"msg-{_checksum(to, subject, body):05d}", "to": to}


def create_ticket(title, priority="normal", tags=None):
    if priority not in ("low", "normal", "high", "urgent"):
        raise ToolError(f"invalid priority {priority!r}: expected low, normal, high or urgent")
    return {"ticket_id": f"T-{_checksum(title, priority) % 9000 + 1000}", "title": title, "priority": priority, "tags": list(tags or [])}


def get_config(section):
    configs = {
        "server": {"zeta": 1, "alpha": 2, "mid": {"port": 8080, "host": "0.0.0.0", "debug": False}},
        "limits": {"max_upload_mb": 25, "rate_per_min": 600, "burst": 40, "alpha": None},
        "features": {"zz_new_ui": True, "beta_search": False, "aa_legacy": True},
    }
    if section not in configs:
        raise ToolError(f"no config section {section!r}")
    return configs[section]


def big_number(exponent):
    n = 2**exponent
    return {"n": n, "negative": -n, "digits": len(str(n)), "exponent": exponent}


def run_query(sql):
    q = sql.strip().lower()
    if not q.startswith("select"):
        raise ToolError("only SELECT statements are allowed")
    if "from employees" in q:
        rows = [
            {"name": "Ada", "dept": "eng", "salary": 185000, "age": 36},
            {"name": "Grace", "dept": "eng", "salary": 192000, "age": 45},
            {"name": "Linus", "dept": "ops", "salary": 150000, "age": 29},
            {"name": "Joan", "dept": "sales", "salary": 99000, "age": 52},
            {"name": "Ken", "dept": "ops", "salary": 143500, "age": 41},
            {"name": "Barbara", "dept": "sales", "salary": 104250, "age": 33},
        ]
        return {"columns": ["name", "dept", "salary", "age"], "rows": rows, "row_count": len(rows)}
    if "from events" in q:
        return {"columns": ["ts", "kind", "user_id"], "rows": [{"ts": f"2024-05-0{d}T12:00:00", "kind": ["login", "purchase", "logout"][d % 3], "user_id": (d * 3) % 8 + 1} for d in range(1, 8)], "row_count": 7}
    raise ToolError(f"unknown table in query: {sql}")


def fail(message, delay_ms=0):
    time.sleep(delay_ms / 1000)
    raise ToolError(message)


def echo(value):
    return {"value": value}


def slow_echo(text, ms=50):
    time.sleep(ms / 1000)
    return {"text": text, "slept_ms": ms}


def get_metrics(service, day):
    seed = _checksum(service, day)
    p50 = 20 + seed % 30
    return {
        "service": service,
        "day": day,
        "requests": 1000 + seed % 5000,
        "errors": seed % 37,
        "latency_ms": {"p99": p50 * 6 + seed % 11, "p50": p50, "p90": p50 * 3},
    }


def translate(text, target_lang):
    key = (text.lower(), target_lang)
    if target_lang not in ("fr", "es", "de"):
        raise ToolError(f"unsupported language: {target_lang}")
    return {"text": TRANSLATIONS.get(key, f"[{target_lang}] {text}"), "source": text, "lang": target_lang}


def geocode(address):
    if not address:
        raise ToolError("empty address")
    c = _checksum(address)
    return {"address": address, "lat": round((c % 18000) / 100 - 90, 4), "lon": round((c * 7 % 36000) / 100 - 180, 4)}


def list_files(directory):
    d = directory.rstrip("/") + "/"
    names = [p[len(d):] for p in FILES if p.startswith(d)]
    if not names:
        raise ToolError(f"no such directory: {directory}")
    return {"directory": directory, "files": names}


def read_file(path):
    if path not in FILES:
        raise ToolError(f"[Errno 2] No such file: '{path}'")
    return {"path": path, "content": FILES[path], "size": len(FILES[path])}


def get_inventory(sku):
    if sku not in INVENTORY:
        raise ToolError(f"unknown sku {sku}")
    return {"sku": sku, "warehouses": dict(INVENTORY[sku])}


def count_words(text):
    counts = {}
    for w in text.lower().split():
        w = w.strip(".,!?;:")
        if w:
            counts[w] = counts.get(w, 0) + 1
    return {"total": sum(counts.values()), "unique": len(counts), "counts": counts}


def get_page(url, page=1):
    pages = 4 if "news" in url else 2
    if page > pages:
        raise ToolError(f"404 Not Found: {url}?page={page}")
    return {"url": url, "page": page, "items": [f"{url.rsplit('/', 1)[-1]}-item-{page}-{i}" for i in range(1, 4)], "last_page": pages}


def get_message(thread_id, index=0):
    """A chat-API-shaped record: its `content` is a list of typed blocks."""
    texts = {"t1": ["Can you summarise Q2?", "Q2 revenue grew 6% over Q1."], "t2": ["Ping"]}
    if thread_id not in texts or index >= len(texts[thread_id]):
        raise ToolError(f"no message {index} in thread {thread_id}")
    role = "user" if index % 2 == 0 else "assistant"
    return {"id": f"{thread_id}-{index}", "role": role, "content": [{"type": "text", "text": texts[thread_id][index]}]}


def rate_limited(key, attempt=0):
    if attempt < 1:
        raise ToolError("429 Too Many Requests: retry after 1s")
    return {"key": key, "value": f"v-{_checksum(key) % 1000}", "attempt": attempt}


TOOLS = {
    f.__name__: f
    for f in [
        get_weather, get_forecast, get_user, list_users, search_docs, list_orders, get_order,
        flaky_fetch, get_stock_price, get_exchange_rates, convert_currency, send_email,
        create_ticket, get_config, big_number, run_query, fail, echo, slow_echo, get_metrics,
        translate, geocode, list_files, read_file, get_inventory, count_words, get_page,
        get_message, rate_limited,
    ]
}


def call(name, arguments):
    """Runs tool `name` on its (already validated) arguments."""
    return TOOLS[name](**arguments)


def error_message(exc):
    """What a failing call prints on stderr (chainbox trims it)."""
    if isinstance(exc, ToolError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def main():
    request = json.load(sys.stdin)
    try:
        result = call(request["name"], request["arguments"])
    except Exception as exc:  # every failure is a tool error with a message
        print(error_message(exc), file=sys.stderr)
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
