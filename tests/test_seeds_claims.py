"""The studies' claims answered from a stored run (serverbench/seeds/claims.py), the rows not built
here pointing at servers/_left_out.toml, and both in the published studies' section."""
import tomllib
from pathlib import Path
from types import SimpleNamespace as NS

import pytest

from serverbench import paths
from serverbench.catalog import left_out
from serverbench.seeds import claims as sc
from serverbench.seeds import section
from serverbench.seeds.studies import Claim, SeedsError, load_all, load_file

ROOT = Path(__file__).resolve().parent.parent
MIB = 2**20


def _g(server: str, verdict: str | None = None, reason: str = "", limit: int | None = None,
       killed: float | None = None, p50: float | None = None, rps: float | None = None, counts: str | None = None) -> NS:
    """A group as the aggregation gives it, with only what the claims read."""
    mem = NS(memory_limit_bytes=limit, memory_killed_at_s=killed, memory_limit_method="cgroup-v2" if limit else None)
    return NS(server=server, throughput=NS(median=rps) if rps is not None else None, latency={"p50": p50},
              figures=NS(over_time=NS(verdict=verdict, verdict_reason=reason, verdict_counts=counts), warmup=None),
              ok=[NS(metrics=NS(memory=mem))])


def _results(workload: str, point: str, groups: list) -> NS:
    return NS(workloads=[NS(name=workload, points=[NS(label=point, groups=groups)])])


def _overload(expect: list[str], rows: tuple[str, ...] = ("a", "b")) -> Claim:
    return Claim.model_validate({"text": "they hold", "said_by": "a study", "workload": "ov", "points": ["full", "quick"],
                                 "rows": list(rows), "rule": "overload", "expect": expect})


def _ratio(**over) -> Claim:
    data = {"text": "a is 5× quicker", "said_by": "a comment", "workload": "w", "points": ["p"], "rows": ["a"],
            "rule": "ratio", "figure": "p50", "than": ["b", "c"], "better": "lower", "factor": 5}
    return Claim.model_validate({**data, **over})


def test_the_seeds_files_carry_the_issue_s_claims_on_real_rows_workloads_and_points() -> None:
    by_id = {s.id: s for s in load_all()}
    texts = {s: [c.text for c in by_id[s].claim] for s in ("stressgrid", "deepu", "locust")}
    assert texts["stressgrid"] == [
        "Netty maintains mostly equal latency for all requests when overloaded",
        "Erlang servers serve a fraction of requests as quickly as possible and let the rest time out",
        "clustered NodeJS and Rapidoid ran out of RAM once overloaded",
        "Go and Java servers were getting progressively slower"]
    assert texts["deepu"] == ["Rust took 0.7 ms over the 200 ms baseline vs Node.js 4–7 ms"]
    assert texts["locust"] == ["Go's p50 100× lower than Java's and Python's"]
    for s in by_id.values():
        for c in s.claim:
            wl = tomllib.loads((ROOT / "workloads" / f"{c.workload}.toml").read_text())
            labels = {p["label"] for size in ("quick", "full") for p in wl.get(size, {}).get("points", [])}
            assert set(c.points) & labels, f"{s.id}: {c.text}: none of {c.points} is a point of {c.workload}"
            for sid in c.rows + c.than:
                assert (paths.SERVERS / sid / "server.toml").is_file(), sid
    deepu = by_id["deepu"].claim[0]
    assert (deepu.minus_ms, deepu.factor, deepu.better, deepu.workload) == (100, 5.7, "lower", "stressgrid")


def test_overload_yes_partly_no_and_not_measured() -> None:
    c = _overload(["holds"])
    holds_a, holds_b = _g("a", "holds", "0.0% failed; ×3 its light-load value"), _g("b", "holds", "×4")
    yes = sc.answer(c, _results("ov", "quick", [holds_a, holds_b]))
    assert (yes.answer, yes.point) == (sc.YES, "quick")
    assert yes.evidence == ["a: holds — 0.0% failed; ×3 its light-load value", "b: holds — ×4"]
    partly = sc.answer(c, _results("ov", "quick", [holds_a, _g("b", "sheds", "12% failed")]))
    assert (partly.answer, partly.why) == (sc.PARTLY, "holds for a; not for b")
    no = sc.answer(c, _results("ov", "full", [_g("a", "slows"), _g("b", "sheds")]))
    assert (no.answer, no.point) == (sc.NO, "full")
    # a row with no verdict is left out of the answer, and said so
    one = sc.answer(c, _results("ov", "full", [holds_a]))
    assert (one.answer, one.why) == (sc.YES, "holds for every one measured: a; not measured: b (no overload verdict)")
    none = sc.answer(c, _results("ov", "full", [_g("a"), _g("z", "holds")]))
    assert none.answer == sc.NOT_MEASURED and "a (no overload verdict), b (no overload verdict)" in none.why
    absent = sc.answer(c, _results("other", "full", [holds_a, holds_b]))
    assert (absent.answer, absent.point) == (sc.NOT_MEASURED, None) and "did not measure ov" in absent.why


def test_a_claim_on_a_row_whose_repetitions_disagree_is_not_settled_never_a_majority() -> None:
    c = _overload(["sheds"], rows=("a", "b", "c"))
    split_a = _g("a", "split", "repetition 1: sheds — x; repetition 2: sheds — y; repetition 3: slows — z",
                 counts="sheds 2 of 3, slows 1")
    r = sc.answer(c, _results("ov", "full", [split_a, _g("b", "sheds", "12% failed"), _g("c", "degrades", "fell")]))
    # b matches and c does not, yet the answer is not "partly": a's verdict is not one
    assert (r.answer, r.point) == (sc.NOT_SETTLED, "full") and sc.NOT_SETTLED in sc.ANSWERS
    assert r.why.startswith("not settled by this run: the repetitions disagree for a (sheds 2 of 3, slows 1); "
                            "of the other rows, holds for: b; not for: c; what would settle it: more repetitions "
                            "(`serverbench seeds --measure --repeat 5`), or the full size (`serverbench run --full "
                            "--workload ov --servers a,b,c"), r.why
    assert r.evidence[0] == ("a: split (sheds 2 of 3, slows 1) — repetition 1: sheds — x; repetition 2: sheds — y; "
                             "repetition 3: slows — z")
    # a majority of matching rows does not settle it either
    both = sc.answer(c, _results("ov", "full", [split_a, _g("b", "sheds"), _g("c", "sheds")]))
    assert both.answer == sc.NOT_SETTLED and "holds for: b, c" in both.why
    # rows whose repetitions all gave one verdict still answer it
    agreed = sc.answer(c, _results("ov", "full", [_g("a", "sheds", counts="sheds 3 of 3"), _g("b", "sheds"),
                                                  _g("c", "sheds")]))
    assert agreed.answer == sc.YES


def test_out_of_memory_is_not_measured_without_a_memory_limit_and_answered_with_one() -> None:
    c = _overload(["out of memory"])
    crashed = [_g("a", "crashes", "its process died at t=40.0 s"), _g("b", "holds")]
    bare = sc.answer(c, _results("ov", "full", crashed))
    assert bare.answer == sc.NOT_MEASURED and bare.why.startswith("the run set no --server-memory-limit for a, b")
    limited = [_g("a", "crashes", "killed at the memory limit at t=31.5 s", limit=1024 * MIB, killed=31.5),
               _g("b", "crashes", "killed at the memory limit at t=50.0 s", limit=1024 * MIB, killed=50.0)]
    yes = sc.answer(c, _results("ov", "full", limited))
    assert yes.answer == sc.YES
    assert yes.evidence[0] == "a: crashes — killed at the memory limit at t=31.5 s (memory limit 1,024 MiB, ended it at t=31.5 s)"
    # a crash the limit did not cause is not running out of memory; a row that held under it is a no
    other = [_g("a", "crashes", "its process died at t=40.0 s", limit=1024 * MIB), _g("b", "holds", limit=1024 * MIB)]
    no = sc.answer(c, _results("ov", "full", other))
    assert no.answer == sc.NO and no.evidence[1].endswith("(memory limit 1,024 MiB, not reached)")
    mixed = sc.answer(c, _results("ov", "full", [limited[0], _g("b", "slows")]))
    assert (mixed.answer, mixed.why) == (sc.YES, "holds for every one measured: a; not measured: b (no --server-memory-limit)")
    # with "out of memory" beside another verdict, a row run without a limit can still match that one
    both = sc.answer(_overload(["out of memory", "sheds"]), _results("ov", "full", [_g("a", "sheds"), _g("b", "holds")]))
    assert (both.answer, both.why) == (sc.YES, "holds for every one measured: a; not measured: b (no --server-memory-limit)")


def test_ratio_lower_with_a_sleep_subtracted_yes_partly_no() -> None:
    c = _ratio(minus_ms=100)
    # a: 0.4 ms on top of the sleep; b: 3 ms (7.5×), c: 1 ms (2.5×)
    groups = [_g("a", p50=100_400), _g("b", p50=103_000), _g("c", p50=101_000)]
    partly = sc.answer(c, _results("w", "p", groups))
    assert (partly.answer, partly.why) == (sc.PARTLY, "holds for a vs b; not for a vs c")
    assert partly.evidence == [
        "a vs b: p50 − 100 ms 400 µs vs 3 ms: b's is 7.5× a's, holds (the claim: 5×)",
        "a vs c: p50 − 100 ms 400 µs vs 1 ms: c's is 2.5× a's, does not hold (the claim: 5×)"]
    yes = sc.answer(c, _results("w", "p", [groups[0], groups[1], _g("c", p50=102_000)]))  # exactly 5×: holds
    assert yes.answer == sc.YES
    no = sc.answer(_ratio(), _results("w", "p", groups))  # without the subtraction: 1.03× and 1.006×
    assert no.answer == sc.NO


def test_ratio_higher_and_not_measured() -> None:
    c = _ratio(figure="requests/s", better="higher", factor=2)
    groups = [_g("a", rps=10_000), _g("b", rps=5_000), _g("c", rps=6_000)]
    r = sc.answer(c, _results("w", "p", groups))
    assert r.answer == sc.PARTLY and r.evidence[0] == (
        "a vs b: requests/s 10,000 req/s vs 5,000 req/s: a's is 2× b's, holds (the claim: 2×)")
    only_a = sc.answer(c, _results("w", "p", [groups[0], _g("x", rps=1)]))
    assert only_a.answer == sc.NOT_MEASURED and only_a.why.endswith("b (no requests/s), c (no requests/s)")
    # a latency not above the subtracted sleep cannot be told from it: that row is not measured
    sunk = sc.answer(_ratio(minus_ms=100), _results("w", "p", [_g("a", p50=99_000), _g("b", p50=103_000)]))
    assert sunk.answer == sc.NOT_MEASURED and "a (no p50 − 100 ms above 0)" in sunk.why


def test_a_claim_is_refused_on_load_with_one_line_naming_the_file_and_field(tmp_path: Path) -> None:
    good = (ROOT / "seeds" / "locust.toml").read_text()
    assert 'rows = ["go-nethttp"]' in good and 'than = ["java-httpserver", "python-fastapi"]' in good
    cases = {
        "ghost_row": (good.replace('rows = ["go-nethttp"]', 'rows = ["go-ghost"]'), "claim.0.rows"),
        "ghost_than": (good.replace('than = ["java-httpserver"', 'than = ["java-ghost"'), "claim.0.than"),
        "no_figure": (good.replace('figure = "p50"\n', ""), "claim.0"),
        "bad_verdict": (good.replace('rule = "ratio"', 'rule = "overload"\nexpect = ["melts"]'), "claim.0"),
    }
    for name, (text, field) in cases.items():
        (tmp_path / name).mkdir()
        p = tmp_path / name / "locust.toml"
        p.write_text(text)
        with pytest.raises(SeedsError) as e:
            load_file(p)
        msg = str(e.value)
        assert "\n" not in msg and str(p) in msg and f"{field}" in msg and "fix" in msg, msg


def test_left_out_names_an_entry_of_servers_left_out_toml(tmp_path: Path) -> None:
    good = (ROOT / "seeds" / "prantl.toml").read_text()
    assert 'left_out = "lowjs"' in good and 'left_out = "v"' in good
    p = tmp_path / "prantl.toml"
    p.write_text(good.replace('left_out = "lowjs"', 'left_out = "lowjs-ghost"'))
    with pytest.raises(SeedsError) as e:
        load_file(p)
    msg = str(e.value)
    assert "\n" not in msg and str(p) in msg and "left_out" in msg and "'lowjs-ghost'" in msg, msg
    # the loader reads the servers folder's own _left_out.toml (doctor's reader): one without the id refuses
    servers = tmp_path / "servers"
    servers.mkdir()
    for sid in {sid for r in load_file(ROOT / "seeds" / "prantl.toml").row for sid in r.maps_to}:
        (servers / sid).mkdir()
        (servers / sid / "server.toml").write_text("")
    (servers / left_out.FILE_NAME).write_text('[[row]]\nid = "v"\nwhat = "V"\nseed = "prantl"\nreason = "r"\n')
    with pytest.raises(SeedsError, match="row.8.left_out: 'lowjs'"):
        load_file(ROOT / "seeds" / "prantl.toml", servers)
    rows, problem = left_out.load()
    assert problem is None and {"v", "lowjs"} <= {r.id for r in rows}


def test_the_section_lists_claims_and_the_rows_not_built_here() -> None:
    run = NS(id=3, fingerprint={"cpu_model": "Test CPU", "cores": 2, "kernel": "6.1", "servers": {}})
    studies = load_all()
    everything = "\n".join(section.markdown(run, _results("tfb-json", "c=64", []), studies, everything=True))
    assert everything.count("#### Claims") == 3 and everything.count("**not measured**") == 6
    assert "- “Netty maintains mostly equal latency for all requests when overloaded” (Stressgrid's text): " \
           "**not measured** — the run did not measure stressgrid-overload at any of devices=0-10000. Rule: the " \
           "overload verdict (overtime/overload.py) of each of java-netty at stressgrid-overload (the first of " \
           "points devices=0-10000 the run has) is holds." in everything
    assert "Not built here: lowjs, for the study's row “lowjs” — low.js, a Node.js-compatible runtime" in everything
    assert "Not built here: v, for the study's row “v” — the V language (Prantl's v row): no registry" in everything
    assert ("Not built here: erlang-cowboy, for the study's rows “Erlang Cowboy 1.x”, “Mochiweb, Cowboy 2.x, "
            "Rapidoid” — Erlang/OTP with Cowboy") in everything
    assert "servers/_left_out.toml also lists for this study: elixir-cowboy — " in everything

    groups = [_g("java-netty", "holds", "0.0% failed; ×5"), _g("node-cluster", "slows", "8% failed"),
              _g("java-rapidoid", "crashes", "its process died at t=12.0 s")]
    report = "\n".join(section.markdown(run, _results("stressgrid-overload", "devices=0-10000", groups), studies))
    assert "### Stressgrid" in report and "Deepu" not in report and "Go's p50" not in report
    assert "(Stressgrid's text): **yes** at stressgrid-overload · devices=0-10000 — holds for every one measured: " \
           "java-netty; not measured: " not in report  # java-netty is the claim's only row: nothing missing
    assert "(Stressgrid's text): **yes** at stressgrid-overload · devices=0-10000 — holds for every one measured: " \
           "java-netty. Rule:" in report
    assert "  - java-netty: holds — 0.0% failed; ×5" in report
    assert "ran out of RAM once overloaded” (Stressgrid's text): **not measured** at stressgrid-overload · " \
           "devices=0-10000 — the run set no --server-memory-limit for node-cluster, java-rapidoid" in report
    # progressively slower: java-netty holds, java-rapidoid crashed, the Go rows were not run
    assert ("“Go and Java servers were getting progressively slower” (Stressgrid's text): **partly** at "
            "stressgrid-overload · devices=0-10000 — holds for java-netty; not for java-rapidoid; not measured: "
            "go-fasthttp (no overload verdict), go-nethttp (no overload verdict)") in report

    page = NS(parts=[], heading=lambda level, text, toc=True: page.parts.append(f"<h{level}>{text}</h{level}>"),
              add=lambda h: page.parts.append(h))
    section.to_page(page, run, _results("stressgrid", "devices=2000", [_g("rust-actix", p50=100_500),
                                                                       _g("node-http", p50=105_000)]))
    text = "".join(page.parts)
    assert "<h4>Deepu, concurrency in modern languages: Claims</h4>" in text
    assert "<strong>yes</strong>" in text and "node-http&#x27;s is 10× rust-actix&#x27;s, holds" in text
