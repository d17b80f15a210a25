"""The environment a contestant's `build`, `run` and `version` commands see (SPEC.md).

Its own module because build, doctor and supervisor all need it and none of them should
import another for it.
"""
from __future__ import annotations

import os

from serverbench import paths
from serverbench.catalog import assets
from serverbench.catalog.manifests import Manifest


# SPEC.md, "TLS": with these set a row serves TLS instead of plaintext, so only the harness sets them (a
# TLS point's start, run/tls_run.py); one inherited from the harness's own environment must not leak
TLS_VARS = ("TLS_CERT", "TLS_KEY", "TLS_PKCS12", "TLS_PKCS12_PASSWORD")
# SPEC.md, "HTTP/2": `$HTTP2` (h2c, h2) likewise comes from an HTTP/2 start's `extra` only
HTTP2_VAR = "HTTP2"


def _affinity_count() -> int:
    return len(os.sched_getaffinity(0))


def server_env(m: Manifest, *, host: str = "127.0.0.1", port: int | None = None,
               workers: int | None = None, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment `build`, `run` and `version` commands see (SPEC.md, server.toml); `extra`
    (the database's `$DATABASE_URL` and `$DB_POOL` for a db row, a TLS start's `$TLS_*`) goes on top of
    everything. The `$TLS_*` variables come from `extra` only, never from the harness's environment."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(paths.TOOLS_BIN), env.get("PATH", os.defpath)])
    env["HOST"] = host
    if port is not None:
        env["PORT"] = str(port)
    else:
        env.pop("PORT", None)  # an inherited PORT must not leak into a server
    for name in (*TLS_VARS, HTTP2_VAR):
        env.pop(name, None)
    env["WORKERS"] = str(workers or m.workers or _affinity_count())
    env["HELLO_FILE"] = str(paths.HELLO_FILE)
    env["COMPRESS_FILE"] = str(assets.compress_file())  # /compress's document (SPEC.md, "CPU work")
    env["CARGO_TARGET_DIR"] = str(paths.CARGO_TARGET)
    # Go's own caches live under $HOME (kept between runs); without HOME it refuses to build.
    if not env.get("HOME") and not env.get("XDG_CACHE_HOME"):
        env.setdefault("GOCACHE", str(paths.BUILD / "go-cache"))
        env.setdefault("GOMODCACHE", str(paths.BUILD / "go-mod"))
        env.setdefault("GOFLAGS", "-modcacherw")  # so `make clean` can delete the module cache
    env.setdefault("GOTOOLCHAIN", "local")  # never let `go` fetch a toolchain of its own
    env.setdefault("MAVEN_OPTS", "-Xmx1g")
    env.setdefault("NPM_CONFIG_UPDATE_NOTIFIER", "false")
    env.setdefault("NPM_CONFIG_FUND", "false")
    env.update(m.env)
    env.update(extra or {})
    return env
