# Stdlib functions that import a module only when first called (codecs by
# name, `_strptime`, email's parser, minidom's builder): the CPython guest
# must have them although no chain imported them before.
import codecs
import email
import time
from datetime import datetime
from xml.dom import minidom

raw = "Subject: Invoice 42\nFrom: Ana <ana@example.com>\nDate: Tue, 02 Jan 2024 10:00:00 +0000\n\nTotal: 12,50 \u20ac\n"
msg = email.message_from_string(raw)
sent = datetime.strptime("2024-01-02 10:00", "%Y-%m-%d %H:%M")
legacy = "Caf\u00e9 na\u00efve".encode("cp1252")
print(msg["Subject"], msg["From"], msg.get_payload().strip())
print(sent.isoformat(), time.strptime("02/01/2024", "%d/%m/%Y").tm_yday)
print(legacy, legacy.decode("cp1252"), len("\u00e9t\u00e9".encode("utf-16")), "\u00e9".encode("utf-32-le"))
print(codecs.encode("chainbox", "rot13"), "b\u00fccher.example".encode("idna"), codecs.decode(b"6869", "hex"))
doc = minidom.parseString("<order id='42'><item>pen</item></order>")
{
    "subject": msg["Subject"],
    "sent": sent.isoformat(),
    "item": doc.getElementsByTagName("item")[0].firstChild.data,
    "latin": "na\u00efve".encode("latin-1").hex(),
    "ascii": "na\u00efve".encode("ascii", "replace").decode("ascii"),
}
