"""The fingerprint the runner stores is the one the report reads (keys in docs/DESIGN.md)."""
from __future__ import annotations

from pathlib import Path

from serverbench.catalog.manifests import load_catalog
from serverbench.rules.fingerprint import normalize
from serverbench.run.fingerprint import fingerprint

REPORT_KEYS = ("cpu_model", "cores", "kernel", "os", "python", "server_cpus", "client_cpus",
               "loadgen_version", "git_commit", "git_dirty", "hostname", "started_at", "servers")


def test_fingerprint_has_the_flat_keys_the_report_reads(servers_root: Path, make_server) -> None:
    make_server("app", version="echo tool 1.2.3")
    m = load_catalog(servers_root).servers["app"]
    fp = fingerprint([m], server_cpus=[0], client_cpus=[1])
    missing = [k for k in REPORT_KEYS if k not in fp]
    assert missing == []
    assert (fp["server_cpus"], fp["client_cpus"]) == ([0], [1])
    assert fp["cores"] >= 1
    info = fp["servers"]["app"]
    assert info["version"] == "tool 1.2.3"
    assert info["model"] == m.model and info["language"] == m.language
    assert normalize(fp) == fp  # already flat: unchanged


def test_normalize_flattens_the_older_nested_layout() -> None:
    old = {"cpu_model": "X", "cpu_count": 2, "pinning": {"server_cpus": [0], "client_cpus": [1]},
           "loadgen": {"path": "/x", "version": "loadgen 0.1.0"}, "git": {"commit": "abc", "dirty": True},
           "servers": {"s": {"model": "actor", "toolchain": "erl 26"}}}
    fp = normalize(old)
    assert fp["cores"] == 2 and fp["server_cpus"] == [0] and fp["client_cpus"] == [1]
    assert fp["loadgen_version"] == "loadgen 0.1.0"
    assert (fp["git_commit"], fp["git_dirty"]) == ("abc", True)
    assert fp["servers"]["s"]["version"] == "erl 26"
    assert "pinning" not in fp and "git" not in fp
