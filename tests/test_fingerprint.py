"""The fingerprint the runner stores is the one the report reads (keys in docs/DESIGN.md)."""
from __future__ import annotations

from pathlib import Path

from serverbench.catalog.manifests import load_catalog
from serverbench.rules.fingerprint import differs, measuring, measuring_code, normalize
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


def test_measuring_code_ignores_words_tests_and_the_report_side() -> None:
    tree = ["100644 blob aaa\tloadgen/src/main.rs", "100644 blob bbb\tserverbench/run/runner.py",
            "100644 blob ccc\tREADME.md", "100644 blob ddd\tserverbench/exporters/to_html.py"]
    base = measuring_code(tree)
    # a commit touching only README and an exporter measures with the same code
    assert measuring_code([tree[0], tree[1], "100644 blob xxx\tREADME.md",
                           "100644 blob yyy\tserverbench/exporters/to_html.py"]) == base
    # loadgen or the harness changed: other code; so does an uncommitted change to a measuring path
    assert measuring_code(["100644 blob zzz\tloadgen/src/main.rs", *tree[1:]]) != base
    assert measuring_code(tree, "diff --git a/loadgen/src/main.rs") != base
    assert measuring("servers/c-epoll/server.c") and measuring("workloads/tfb-db.toml")
    assert not measuring("docs/DESIGN.md") and not measuring("tests/test_study.py")
    assert not measuring("studies/study.db") and measuring("Makefile")


def test_runs_compare_by_machine_and_measuring_code_else_by_commit() -> None:
    here = {"cpu_model": "X", "cores": 2, "git_commit": "a" * 40, "measuring_code": "m1"}
    assert differs({**here, "git_commit": "b" * 40}, here) is None  # same code, another commit
    why = differs({**here, "measuring_code": "m2", "git_commit": "b" * 40}, here)
    assert why is not None and why.startswith("measured by other code (commit bbbbbbbbbbbb")
    assert "measured on Y with 2 cores" in (differs({**here, "cpu_model": "Y"}, here) or "")
    # a run stored before measuring_code: its commit decides
    old = {"cpu_model": "X", "cores": 2, "git_commit": "b" * 40}
    assert differs(old, here) == f"measured at commit {'b' * 12}, this run at {'a' * 12}"
    assert differs({**old, "git_commit": "a" * 40}, here) is None


def test_the_fingerprint_carries_this_checkouts_measuring_code(servers_root: Path, make_server) -> None:
    make_server("app")
    fp = fingerprint([load_catalog(servers_root).servers["app"]], server_cpus=[0], client_cpus=[1])
    assert isinstance(fp["measuring_code"], str) and len(fp["measuring_code"]) == 16
