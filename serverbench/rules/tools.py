"""The load tools a cross-check can drive (name, install source, threads, what each is known for) and
the rate of the server's own count: what the cross-check runs by and the report judges by.

Installs are `make crosscheck-tools` (scripts/install-crosscheck-tools.sh) at the versions pinned
there; crosscheck/tools.py finds a tool's executable and reads its version.
"""
from __future__ import annotations

from dataclasses import dataclass

INSTALL = "make crosscheck-tools"


@dataclass(frozen=True)
class Tool:
    name: str
    exe: str
    version_args: tuple[str, ...]
    source: str  # where the project's script gets it: apt | cargo | go | pip | built here
    package: str  # what it installs from that source, pinned where the source allows
    multi_core: bool  # False: one thread, whatever the CPUs (ab, locust)
    home: str  # what the tool is known for

    def install_hint(self) -> str:
        how = {"apt": f"apt-get install -y {self.package}", "cargo": f"cargo install --locked {self.package}",
               "go": f"go install {self.package} (Go module proxy)", "pip": f"pip install {self.package}",
               "built": "make loadgen"}[self.source]
        return how if self.source == "built" else f"{INSTALL} (runs: {how})"


TOOLS: dict[str, Tool] = {t.name: t for t in (
    Tool("loadgen", "loadgen", ("--version",), "built", "loadgen/", True, "serverbench's own"),
    Tool("wrk", "wrk", ("-v",), "apt", "wrk", True, "closed loop, epoll, per-thread event loops"),
    Tool("ab", "ab", ("-V",), "apt", "apache2-utils", False, "ApacheBench, one thread"),
    Tool("oha", "oha", ("--version",), "cargo", "oha@1.16.0", True, "Rust, tokio"),
    Tool("hey", "hey", (), "go", "github.com/rakyll/hey@v0.1.5", True, "Go, goroutine per worker"),
    Tool("k6", "k6", ("version",), "go", "go.k6.io/k6@v1.8.1", True, "Go with a JavaScript VM per user"),
    Tool("drill", "drill", ("--version",), "cargo", "drill@0.9.1", True, "Rust, YAML plans"),
    Tool("locust", "locust", ("--version",), "pip", "locust==2.47.0 (own venv .tools/locust-venv)", False,
         "Python, gevent, one process"),
    Tool("h2load", "h2load", ("--version",), "apt", "nghttp2-client", True,
         "nghttp2's HTTP/2 load client (h2 and h2c), closed loop, HttpArena's"),
)}
DEFAULT_ORDER = ("loadgen", "wrk", "ab", "oha", "hey", "k6", "drill", "locust", "h2load")


def get(name: str) -> Tool:
    """The tool called `name`; ValueError naming the known ones."""
    if name not in TOOLS:
        raise ValueError(f"unknown tool {name!r}; known: {', '.join(DEFAULT_ORDER)}")
    return TOOLS[name]


def rate(count: int | None, seconds: float | None) -> float | None:
    """Requests per second, None when either figure is missing or the time is not positive."""
    if count is None or not seconds or seconds <= 0:
        return None
    return count / seconds


__all__ = ["INSTALL", "Tool", "TOOLS", "DEFAULT_ORDER", "get", "rate"]
