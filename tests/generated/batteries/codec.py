PRELUDE = "import base64, binascii, hashlib, unicodedata"
B = ["b''", "b'a'", "b'ab'", "b'abc'", "b'hello world'", "bytes(range(256))", "b'\\x00\\xff\\xfe'", "'text'.encode()", "b'\\xfb\\xff'", "bytearray(b'xy')", "memoryview(b'mv')"]
ENC = ["b'YQ=='", "b'YWI='", "b'YWJj'", "b'YQ'", "b'Y Q = ='", "'YWJj'", "b'!!!'", "b'YW\\nJj'", "b'-_8='", "b'+/8='", "b'GEZDG==='", "b'MFRGG==='", "b'616263'", "b'6162G'", "b'0x61'", "'6162'", "b'@:E^'", "b'<~@:E^~>'", "b'VPRom'"]
HX = ['"61 62"', '"6g"', '"616"', '" 61\\n62 "', '""']
NM = ['"md5"', '"SHA256"', '"nope"', '"sha3_512"', '"blake2s"']
LK = ['"LATIN SMALL LETTER A"', '"SNOWMAN"', '"NOPE"', '"latin capital letter b"']
U = ["'a'", "'é'", "'Ω'", "'日'", "'½'", "'\\u0301'", "'ǅ'", "' '", "'\\x00'", "'Ⅻ'", "'١'", "'😀'", "'ﬁ'", "'Å'", "'\\u00a0'"]
S = ["'Café'", "'e\\u0301'", "'ﬁne Ⅻ ½'", "'Å'", "'ｈｅｌｌｏ'", "'한국어'", "''"]
def expr(rng):
    k = rng.choice
    b, e, u, s = k(B), k(ENC), k(U), k(S)
    return k([
        f"base64.b64encode({b})", f"base64.b64decode({e})", f"base64.b64decode({e}, validate=True)", f"base64.urlsafe_b64encode({b})",
        f"base64.urlsafe_b64decode({e})", f"base64.b32encode({b})", f"base64.b32decode({e})", f"base64.b32decode({e}, casefold=True)",
        f"base64.b16encode({b})", f"base64.b16decode({e})", f"base64.b16decode({e}, casefold=True)", f"base64.standard_b64encode({b})",
        f"base64.b85encode({b})", f"base64.b85decode({e})", f"base64.a85encode({b})", f"base64.a85decode({e})", f"base64.b32hexencode({b})",
        f"base64.encodebytes({b})", f"base64.decodebytes({e})", f"base64.b64encode({b}, altchars=b'-_')",
        f"binascii.hexlify({b})", f"binascii.hexlify({b}, '-')", f"binascii.hexlify({b}, ':', 2)", f"binascii.unhexlify({e})", f"binascii.b2a_hex({b})",
        f"binascii.a2b_hex({e})", f"binascii.crc32({b})", f"binascii.crc32({b}, 12345)", f"binascii.b2a_base64({b})", f"binascii.b2a_base64({b}, newline=False)",
        f"binascii.a2b_base64({e})", f"binascii.crc_hqx({b}, 0)", f"{b}.hex()", f"{b}.hex(':')", f"{b}.hex('-', -2)", f"bytes.fromhex({k(HX)})",
        f"hashlib.sha256({b}).hexdigest()", f"hashlib.md5({b}).hexdigest()", f"hashlib.sha1({b}).digest()", f"hashlib.sha512({b}).hexdigest()[:20]",
        f"hashlib.new('sha256', {b}).hexdigest()", f"hashlib.blake2b({b}).hexdigest()[:16]", f"hashlib.sha3_256({b}).hexdigest()[:16]",
        f"hashlib.sha256({b}).name", f"hashlib.sha256({b}).digest_size", f"hashlib.sha256({b}).block_size", f"hashlib.blake2b({b}, digest_size=8).hexdigest()",
        f"hashlib.shake_128({b}).hexdigest(5)", f"hashlib.sha224({b}).hexdigest()", f"hashlib.sha384({b}).hexdigest()[:10]", f"hashlib.blake2s({b}).hexdigest()[:10]",
        f"(lambda h: (h.update({b}), h.update({b}), h.hexdigest()[:12])[2])(hashlib.md5())", f"hashlib.new({k(NM)}).name",
        f"hashlib.pbkdf2_hmac('sha256', {b}, b'salt', 2).hex()[:16]", f"sorted(hashlib.algorithms_guaranteed)[:5]",
        f"unicodedata.name({u}, None)", f"unicodedata.category({u})", f"unicodedata.numeric({u}, -1)", f"unicodedata.decimal({u}, -1)", f"unicodedata.digit({u}, -1)",
        f"unicodedata.bidirectional({u})", f"unicodedata.combining({u})", f"unicodedata.east_asian_width({u})", f"unicodedata.mirrored({u})",
        f"unicodedata.decomposition({u})", f"unicodedata.normalize('NFC', {s})", f"unicodedata.normalize('NFD', {s})", f"unicodedata.normalize('NFKC', {s})",
        f"unicodedata.normalize('NFKD', {s})", f"unicodedata.is_normalized('NFC', {s})", f"unicodedata.lookup({k(LK)})",
        f"unicodedata.unidata_version", f"unicodedata.name({u})", f"unicodedata.numeric({u})",
    ])
