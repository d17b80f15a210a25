"""loadgen's command line against the built binary: every flag the harness can put on it (built in
one place, processes/loadgen.py's `command_line`) is one that `loadgen --help` lists, and
docs/DESIGN.md's flag table lists exactly the flags `--help` lists."""
from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

from serverbench import paths
from serverbench.catalog.workloads import Point
from serverbench.processes import loadgen

ROOT = Path(__file__).resolve().parent.parent
LOADGEN = paths.loadgen_binary()
FLAG = re.compile(r"--[a-z][a-z0-9-]*")
# the flags every binary's argument parser adds on its own; the table documents the load's options
BUILT_IN = {"--help", "--version"}
# flags no peer tool the cross-check drives shares with loadgen: only processes/loadgen.py writes them
LOADGEN_ONLY = {"--connections", "--warmup", "--shard", "--start-at", "--noise", "--stages", "--max-connections",
                "--session-requests", "--think-jitter", "--loop-sessions", "--no-keepalive", "--die-with-parent",
                "--tls-ca"}

needs_loadgen = pytest.mark.skipif(not LOADGEN.is_file(), reason="loadgen not built (make loadgen)")


def help_flags(text: str) -> set[str]:
    """The long flags an option line of clap's `--help` starts with ("  -c, --connections <C>")."""
    return {m.group(1) for m in re.finditer(r"^\s+(?:-\w, )?(--[a-z][a-z0-9-]*)", text, re.M)}


def design_flags(text: str) -> set[str]:
    """The flags in the option column of docs/DESIGN.md's "loadgen command line" block."""
    block = text.split("## loadgen command line", 1)[1].split("```", 2)[1]
    out: set[str] = set()
    for line in block.splitlines():
        # an option line starts within the first columns; a description's continuation is indented past them
        m = re.match(r"^ {1,8}(-.*)", line)
        if m:
            out |= set(FLAG.findall(re.split(r"\s{2,}", m.group(1))[0]))
    return out


def source_flags(path: Path) -> set[str]:
    """Every string literal in `path` that is a long flag."""
    return {n.value for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and FLAG.fullmatch(n.value)}


def every_option() -> list[list[str]]:
    """Command lines that together take every branch of the builder."""
    url, path = "http://127.0.0.1:1", "/"
    closed = Point(label="c", connections=4, threads=2, requests=100, time_limit="5s", method="POST",
                   headers=["X-A: 1"], body="{}", keepalive=False, pipeline=2, timeout="1s",
                   connect_timeout="1s", seed=7, max_connections=9)
    timed = Point(label="d", duration="1s")
    opened = Point(label="o", mode="open", rate=100, poisson=True, duration="1s", think="1ms", think_jitter=5)
    sessions = Point(label="s", mode="sessions", users=3, ramp="1s", spawn_rate=2, session_requests=4,
                     loop_sessions=True, stages="1s:3,1s:6")
    noisy = Point(label="n", duration="1s", noise="slow-reader", noise_connections=2, noise_interval="1s",
                  noise_read_rate=10, noise_path="/x", noise_lead="1s")
    lines = [loadgen.command_line(p, url, path, threads=1, json_path="out.json")
             for p in (closed, timed, opened, sessions, noisy)]
    lines.append(loadgen.command_line(opened, url, path, threads=1, rate=50.0, open_warmup=False, warmup="1s",
                                      shard=(0, 2), start_at=1.5, json_path="out.json"))
    tls = Point(label="t", duration="1s", tls="rsa", keepalive=False)
    lines.append(loadgen.command_line(tls, url, path, threads=1, json_path="out.json", tls_ca="ca.pem"))
    h2 = Point(label="h", duration="1s", http2="h2c", streams=4)
    lines.append(loadgen.command_line(h2, url, path, threads=1, json_path="out.json"))
    return lines


def test_a_point_maps_to_its_flags_then_threads_warmup_shard_and_result() -> None:
    tail = ["--threads", "1", "--json", "o", "--quiet"]
    p = Point(label="x", connections=100, requests=2000, keepalive=False, pipeline=4)
    assert loadgen.command_line(p, "http://h:1/", "/tenth?ms=5", threads=1, json_path="o") == [
        "http://h:1/tenth?ms=5", "--connections", "100", "--requests", "2000", "--no-keepalive",
        "--pipeline", "4", *tail]
    capped = Point(label="x", connections=100, requests=2000, time_limit="12s")
    assert loadgen.command_line(capped, "http://h:1", "/", threads=1, json_path="o")[3:7] == [
        "--requests", "2000", "--duration", "12s"]
    o = Point(label="o", mode="open", rate="50%", duration="5s", path="/json", poisson=True)
    with pytest.raises(ValueError, match="calibrated rate"):
        loadgen.command_line(o, "http://h:1", "/", threads=1, json_path="o")
    assert loadgen.command_line(o, "http://h:1", "/", threads=1, json_path="o", rate=1234.5) == [
        "http://h:1/json", "--duration", "5s", "--rate", "1234.5", "--poisson", "--warmup", "500ms", *tail]
    assert "--warmup" not in loadgen.command_line(o, "http://h:1", "/", threads=1, json_path="o", rate=1.0,
                                                  open_warmup=False)
    s = Point(label="s", mode="sessions", users=2000, ramp="10s", duration="10s", session_requests=100,
              think="900ms", think_jitter=5, timeout="5s", threads=2)
    assert loadgen.command_line(s, "http://h:1", "/d", threads=1, json_path="o", shard=(1, 3), start_at=2.5) == [
        "http://h:1/d", "--threads", "2", "--duration", "10s", "--users", "2000", "--ramp", "10s",
        "--session-requests", "100", "--think", "900ms", "--think-jitter", "5", "--timeout", "5s",
        "--shard", "1/3", "--start-at", "2.500000", "--json", "o", "--quiet"]
    with pytest.raises(ValueError, match="stepped by the runner"):
        loadgen.command_line(Point(label="c", mode="capacity", start_rate=10), "http://h:1", "/", threads=1,
                             json_path="o")


@pytest.fixture(scope="module")
def help_text() -> str:
    out = subprocess.run([str(LOADGEN), "--help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_help_and_design_parsers_read_option_lines() -> None:
    sample = "Options:\n  -c, --connections <C>\n          Closed load: see --pipeline\n      --poisson\n"
    assert help_flags(sample) == {"--connections", "--poisson"}
    doc = ("## loadgen command line\n```\n  -c, --connections C      see --rate\n      --body S | --body-file F\n"
           "                           --noise-path, in prose\n```\n")
    assert design_flags(doc) == {"--connections", "--body", "--body-file"}


@needs_loadgen
def test_every_flag_the_harness_emits_is_one_loadgen_takes(help_text: str) -> None:
    known = help_flags(help_text)
    emitted = {a for line in every_option() for a in line if FLAG.fullmatch(a)}
    assert emitted - known == set(), f"the harness emits flags loadgen --help does not list: {sorted(emitted - known)}"
    written = source_flags(ROOT / "serverbench" / "processes" / "loadgen.py")
    assert written - known == set(), f"processes/loadgen.py writes flags loadgen does not take: {sorted(written - known)}"
    unreached = written - BUILT_IN - emitted
    assert unreached == set(), f"flags the builder writes but no line of every_option() reaches: {sorted(unreached)}"


@needs_loadgen
def test_the_design_table_lists_exactly_the_flags_of_help(help_text: str) -> None:
    listed = design_flags((ROOT / "docs" / "DESIGN.md").read_text())
    known = help_flags(help_text) - BUILT_IN
    assert listed - known == set(), f"docs/DESIGN.md lists flags loadgen does not take: {sorted(listed - known)}"
    assert known - listed == set(), f"docs/DESIGN.md's loadgen table misses: {sorted(known - listed)}"


@needs_loadgen
def test_the_fake_loadgen_takes_only_real_flags(help_text: str) -> None:
    fake = source_flags(ROOT / "tests" / "fixtures" / "run" / "fake_loadgen.py")
    unknown = fake - help_flags(help_text)
    assert unknown == set(), f"the tests' fake loadgen takes flags the real one does not: {sorted(unknown)}"


def test_only_the_builder_writes_loadgen_flags() -> None:
    builder = ROOT / "serverbench" / "processes" / "loadgen.py"
    others = {str(p.relative_to(ROOT)): found for p in sorted((ROOT / "serverbench").rglob("*.py"))
              if p != builder and (found := source_flags(p) & LOADGEN_ONLY)}
    assert others == {}, f"loadgen's command line is built in processes/loadgen.py only: {others}"
