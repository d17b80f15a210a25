"""verify's second look (show.verify_twice): a row with a failed check is verified once more in a fresh start,
running only what failed; what passes then says how it failed the first time, what fails again stands; the
server's last log lines and the first failure's detail come with a failed verdict (a CI log keeps its tail)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from serverbench.catalog import manifests as catalog
from serverbench.store import Store
from serverbench.verify.servers import verify_servers
from serverbench.verify.show import verify_twice

from conftest import write_manifest

REFSERVER = Path(__file__).parent / "fixtures" / "refserver.py"

CHOICES = {"pipelined_writes": "per-response", "file_read": "blocking", "nodelay": "off"}


def _row(tmp_path: Path, brk: str) -> Any:
    """refserver.py as a row with BREAK=`brk` (its $FLAKY_MARK in tmp_path), through conftest's write_manifest."""
    run = f"BREAK={brk} FLAKY_MARK={tmp_path / 'mark'} exec {sys.executable} {REFSERVER}"
    write_manifest(tmp_path / "servers", f"ref-{brk}", model="event-loop", framework="asyncio, hand-written HTTP",
                   description=f"test fixture: refserver.py with BREAK={brk}", build="", run=run,
                   requires=["python3"], choices=CHOICES)
    cat = catalog.load_catalog(tmp_path / "servers")
    assert cat.errors == []
    return cat.servers[f"ref-{brk}"]


def _twice(tmp_path: Path, m: Any, why: dict[str, str]) -> tuple[list[str], list[str], str]:
    console = Console(record=True, width=200)
    passed, failed = verify_twice([m], Store(tmp_path / "r.db"), server_cpus=[0], allow_unavailable=False,
                                  why=why, out=console, err=console, note="again", features=())
    return passed, failed, console.export_text()


def test_a_row_failing_once_passes_on_the_second_look_and_says_how_it_failed(tmp_path: Path) -> None:
    m = _row(tmp_path, "no-404-once")
    passed, failed, text = _twice(tmp_path, m, why := {})
    assert passed == ["ref-no-404-once"] and failed == [] and why == {}
    assert "again: ref-no-404-once" in text  # the second pass is announced, with the row
    [nf] = [c for c in Store(tmp_path / "r.db").verdict("ref-no-404-once").checks if c["name"] == "not-found"]
    assert nf["passed"] and "passed when verified again in a fresh start; the first time:" in nf["detail"]
    assert "200" in nf["detail"].split("the first time:")[1]  # the first start's 200 for an unknown path


def test_a_row_failing_twice_fails_with_its_detail_and_log(tmp_path: Path) -> None:
    m = _row(tmp_path, "no-404")
    passed, failed, text = _twice(tmp_path, m, why := {})
    assert passed == [] and failed == ["ref-no-404"]
    assert why["ref-no-404"].startswith("not-found: GET /nope: ") and "200" in why["ref-no-404"]
    stored = {c["name"]: c for c in Store(tmp_path / "r.db").verdict("ref-no-404").checks}
    assert not stored["not-found"]["passed"] and "the first time" not in stored["not-found"]["detail"]
    assert "ref-no-404's last log lines:" in text and "refserver listening on" in text and "break=no-404" in text


def test_a_passing_row_is_verified_once_and_keeps_no_log(tmp_path: Path) -> None:
    m = _row(tmp_path, "no-404-once")
    (tmp_path / "mark").touch()  # the flaw already spent: a correct server
    [v] = verify_servers([m], Store(tmp_path / "r.db"), server_cpus=[0], allow_unavailable=False, features=())
    assert v.passed and v.log_tail == ""
    passed, failed, text = _twice(tmp_path, m, {})
    assert passed == ["ref-no-404-once"] and "again:" not in text


def test_an_admitted_row_with_a_failed_check_shows_no_log(tmp_path: Path) -> None:
    m = _row(tmp_path, "close-case-sensitive")  # a robustness deviation: admitted, failing twice
    passed, failed, text = _twice(tmp_path, m, {})
    assert passed == ["ref-close-case-sensitive"] and failed == [] and "again: ref-close-case-sensitive" in text
    [v] = verify_servers([m], Store(tmp_path / "r2.db"), server_cpus=[0], allow_unavailable=False, features=())
    assert v.passed and v.log_tail  # the log was kept, as for any failed check ...
    assert "last log lines:" not in text  # ... but not shown under a verdict that admits the row
