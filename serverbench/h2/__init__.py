"""The harness's own HTTP/2 client (SPEC.md, "HTTP/2"): the `h2` package's connection state machine over a
blocking socket, cleartext with prior knowledge (h2c) or TLS with ALPN `h2`.

client.py  H2Client: connect, open streams, read until they end (WINDOW_UPDATE given back as data arrives),
           reset a stream, write raw bytes, and what the server said (its SETTINGS, a GOAWAY); get(): one
           request on a fresh connection

May import: nothing of serverbench (the `h2` package and the standard library only). Hands out `H2Client`,
`H2Error`, `Answer` and `get` to processes (the readiness probe of an HTTP/2 start) and verify (the `h2`
and `h2c` checks).
"""
from .client import Answer, H2Client, H2Error, get

__all__ = ["Answer", "H2Client", "H2Error", "get"]
