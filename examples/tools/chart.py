#!/usr/bin/env python3
"""Command tool `chart`: prints a ToolExecutionResult-shaped object with a
text block and an image block (a small PNG, base64)."""
import base64
import json
import struct
import sys
import zlib


def png(width, height, pixel):
    """A solid-color RGB PNG."""
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" + bytes(pixel) * width
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


args = json.load(sys.stdin)["arguments"]
image = png(8, 8, (66, 133, 244))
print(json.dumps({
    "content": [
        {"type": "text", "text": f"chart {args['title']!r}: 8x8 PNG"},
        {"type": "image", "media_type": "image/png", "data": base64.b64encode(image).decode("ascii")},
    ]
}))
