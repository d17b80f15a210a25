"""Server-side truth: the contract's shared /tenth counter, read before and after a tool's run.

`GET /tenth?ms=0` increments the counter and answers its new value, so the read itself counts:
with `before` and `after` the values the two reads returned, the tool's requests that the server
handled in between are `after - before - 1`.
"""
from __future__ import annotations

import http.client
from pathlib import Path
from urllib.parse import urlsplit

from ..h2 import H2Error, get
from ..processes.supervisor import tls_context

COUNTER_PATH = "/tenth?ms=0"


class CounterError(Exception):
    """The counter could not be read (one line naming the server URL and what it answered)."""


def read_counter(base_url: str, timeout: float = 5.0, ca: Path | None = None, http2: bool = False) -> int:
    """The counter's value after this read's own increment; over TLS (an https:// URL) with the server's
    certificate verified against `ca`, the run's CA, as the readiness probe does; over HTTP/2 with `http2`
    (a start serving `$HTTP2` may speak nothing else on its port)."""
    u = urlsplit(base_url)
    host = u.hostname or "127.0.0.1"
    if http2:
        return _read_h2(base_url, host, u.port or 80, timeout, ca)
    conn: http.client.HTTPConnection
    if u.scheme == "https":
        if ca is None:
            raise CounterError(f"{base_url}: a TLS server's counter needs the run's CA to verify it (ca)")
        conn = http.client.HTTPSConnection(host, u.port or 443, timeout=timeout, context=tls_context(ca))
    else:
        conn = http.client.HTTPConnection(host, u.port or 80, timeout=timeout)
    try:
        conn.request("GET", COUNTER_PATH, headers={"Connection": "close"})
        resp = conn.getresponse()
        body = resp.read().decode(errors="replace").strip()
    except (OSError, http.client.HTTPException) as e:
        raise CounterError(f"{base_url}{COUNTER_PATH}: {e}; is the server still running?") from None
    finally:
        conn.close()
    if resp.status != 200 or not body.isdigit():
        raise CounterError(f"{base_url}{COUNTER_PATH} answered {resp.status} {body[:40]!r}, not a counter value; "
                           "fix the server's /tenth (SPEC.md)")
    return int(body)


def _read_h2(base_url: str, host: str, port: int, timeout: float, ca: Path | None) -> int:
    try:
        a = get(host, port, COUNTER_PATH, tls=tls_context(ca) if ca is not None else None, timeout=timeout)
    except (OSError, H2Error) as e:
        raise CounterError(f"{base_url}{COUNTER_PATH} over HTTP/2: {e}; is the server still running?") from None
    body = bytes(a.body).decode(errors="replace").strip()
    if a.status != 200 or not body.isdigit():
        raise CounterError(f"{base_url}{COUNTER_PATH} answered {a.status} {body[:40]!r} over HTTP/2, not a counter "
                           "value; fix the server's /tenth (SPEC.md)")
    return int(body)


def answered(before: int, after: int) -> int:
    """Requests the server handled between two reads, excluding the second read itself."""
    if after <= before:
        raise CounterError(f"the counter went from {before} to {after}: it must grow by at least the read "
                           "itself; a per-process counter or a restarted server cannot be used")
    return after - before - 1


__all__ = ["read_counter", "answered", "CounterError", "COUNTER_PATH"]
