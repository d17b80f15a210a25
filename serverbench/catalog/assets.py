"""The JSON document `/compress` serves gzipped (SPEC.md, "CPU work"; issue 48): 4 MiB and a little more of
API-like records, made from a fixed seed so that every machine has the same bytes, written once into
`assets/compress.json` (not committed: 4 MiB of made-up records would sit in every clone's history) and
passed to a row as `$COMPRESS_FILE`. `DOCUMENT_SHA256` pins the bytes: a Python whose `random` made
others would fail its test, not silently change what every row compresses.

Records, not one repeated string: a repeated record compresses a thousandfold and measures nothing;
these compress about as JSON APIs do (several-fold), so a request's CPU is deflate's real work.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import tempfile
from pathlib import Path

from .. import paths

SEED = 48
KIB_MAX = 4096  # the largest `kb` a request may ask for; the document is longer
DOCUMENT_SHA256 = "d733640dcf9ae305526cc508b99f4274d3eb3fc62dc947425187fe6ef635838c"
_SYLLABLES = ("ka", "lo", "mi", "ren", "to", "sa", "vel", "do", "ni", "por", "tes", "qua", "zen", "bri", "ul", "mar",
              "fen", "ko", "li", "sto", "an", "er", "gu", "hal", "is", "jo", "ny", "op", "ru", "wi")
_CITIES = ("Aldren", "Bexley", "Corvin", "Dunmere", "Elsford", "Farrow", "Glenhaven", "Harlow", "Ivel", "Jarrow")


def _word(r: random.Random) -> str:
    return "".join(r.choice(_SYLLABLES) for _ in range(r.randint(1, 4)))


def _record(r: random.Random, i: int) -> dict[str, object]:
    first, last = _word(r).capitalize(), _word(r).capitalize()
    return {"id": i, "name": f"{first} {last}", "email": f"{first.lower()}.{last.lower()}@example.com",
            "active": r.random() < 0.8, "score": round(r.uniform(0, 100), 2),
            "tags": [_word(r) for _ in range(r.randint(0, 5))],
            "address": {"street": f"{r.randint(1, 999)} {_word(r).capitalize()} Road", "city": r.choice(_CITIES),
                        "zip": f"{r.randint(10000, 99999)}"},
            "bio": " ".join(_word(r) for _ in range(r.randint(5, 30)))}


def document_bytes() -> bytes:
    """The document: one JSON array, records until it is longer than KIB_MAX KiB."""
    r = random.Random(SEED)
    parts, size, i = [], 2, 0
    while size <= KIB_MAX * 1024:
        i += 1
        text = json.dumps(_record(r, i), separators=(",", ":"))
        parts.append(text)
        size += len(text) + 1
    return ("[" + ",".join(parts) + "]").encode()


def compress_file() -> Path:
    """`assets/compress.json`, written on first use (atomically: two harnesses may race to write it)."""
    path = paths.COMPRESS_FILE
    if path.is_file() and path.stat().st_size > KIB_MAX * 1024:
        return path
    data = document_bytes()
    fd, tmp = tempfile.mkstemp(prefix=".compress-", dir=path.parent)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    return path


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


__all__ = ["compress_file", "document_bytes", "sha256", "KIB_MAX", "DOCUMENT_SHA256", "SEED"]
