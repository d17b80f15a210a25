"""The compress feature (SPEC.md, "CPU work"; issue 48): the document every row compresses, the manifest's
keys, and verify's `compress` check against the reference server — correct, answering from a cache,
answering uncompressed bytes labelled gzip — and skipped for a row that declares no compression."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from serverbench.catalog import assets
from serverbench.catalog.manifests import load_catalog
from serverbench.verify import verify

from conftest import write_manifest

REFSERVER = Path(__file__).parent / "fixtures" / "refserver.py"
ROW = SimpleNamespace(id="ref", counter="shared", bound=None,
                      choices=SimpleNamespace(db=False, compress=True, compress_out=None))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def refserver() -> Iterator:
    procs: list[subprocess.Popen[bytes]] = []

    def start(brk: str | None = None) -> tuple[str, int]:
        port = _free_port()
        env = {"PORT": str(port), "PATH": "/usr/bin:/bin", "COMPRESS_FILE": str(assets.compress_file()),
               **({"BREAK": brk} if brk else {})}
        p = subprocess.Popen([sys.executable, str(REFSERVER)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=env)
        procs.append(p)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return f"http://127.0.0.1:{port}", p.pid
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("refserver did not start listening")

    yield start
    for p in procs:
        p.terminate()  # this PID only
        p.wait(5)


def test_the_document_is_the_same_bytes_everywhere_and_longer_than_any_request() -> None:
    data = assets.document_bytes()
    assert len(data) > assets.KIB_MAX * 1024 and data.startswith(b'[{"id":1,')
    assert assets.sha256(data) == assets.DOCUMENT_SHA256
    assert assets.compress_file().read_bytes() == data
    # JSON an API would send: it compresses several-fold, not a thousandfold
    import zlib
    assert 2.0 < len(data) / len(zlib.compress(data, 6)) < 8.0


def _compress(url: str, pid: int, row: object = ROW):
    return verify(url, row, pid=pid, only=["compress"])[0]


def test_a_row_that_compresses_every_request_passes(refserver) -> None:
    r = _compress(*refserver())
    assert r.passed and not r.skipped, r.detail
    assert "compressed each time" in r.detail and "identical" in r.detail


def test_a_row_that_answers_from_a_cache_fails(refserver) -> None:
    r = _compress(*refserver("compress-cached"))
    assert not r.passed and "answered from a cache" in r.detail, r.detail


def test_a_row_that_labels_plain_bytes_gzip_fails(refserver) -> None:
    r = _compress(*refserver("compress-plain"))
    assert not r.passed and "not gzip" in r.detail, r.detail


def test_a_row_without_compression_is_skipped_with_its_reason() -> None:
    url = f"http://127.0.0.1:{_free_port()}"  # skipped before any request
    plain = SimpleNamespace(id="p", counter="shared", bound=None, choices=SimpleNamespace(compress=False,
                                                                                         compress_out=None))
    r = _compress(url, None, plain)
    assert r.skipped and r.detail == "not a compress row"
    out = SimpleNamespace(id="o", counter="shared", bound=None, choices=SimpleNamespace(
        compress=False, compress_out="no zlib binding reachable here"))
    r = _compress(url, None, out)
    assert r.skipped and r.detail == "serves no /compress here (compress_out): no zlib binding reachable here"


def test_a_compress_row_declares_its_library_and_where_the_work_runs(servers_root) -> None:
    base = {"pipelined_writes": "per-response", "file_read": "blocking", "nodelay": "on"}
    write_manifest(servers_root, "ok", choices={**base, "compression": "zlib 1.2.13 (Python zlib)", "cpu_work": "inline"})
    write_manifest(servers_root, "half", choices={**base, "compression": "zlib 1.2.13"})
    write_manifest(servers_root, "both", choices={**base, "compression": "zlib", "cpu_work": "inline",
                                                 "compress_out": "none here"})
    cat = load_catalog(servers_root)
    assert cat.servers["ok"].choices.compress and set(cat.servers) == {"ok"}
    errors = " ".join(map(str, cat.errors))
    assert "declares both compression and cpu_work" in errors and "compression and compress_out exclude" in errors
