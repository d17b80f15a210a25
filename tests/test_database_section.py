"""What a real database changes (exporters/database_section.py): the stressgrid order beside a db
workload's, among the rows both have, with who moved and how far the orders agree."""
from types import SimpleNamespace as NS

from serverbench.exporters import database_section as ds


def _g(server: str, place: int | None, model: str = "m", measured: bool = True) -> NS:
    return NS(server=server, place=place, model=model, throughput=object() if measured else None)


def _results(sleep: list, db: dict[str, list]) -> NS:
    wls = [NS(name="stressgrid", points=[NS(label="devices=2000", groups=sleep)])]
    wls += [NS(name=name, points=[NS(label=label, groups=gs) for label, gs in pts]) for name, pts in db.items()]
    return NS(workloads=wls)


def test_places_are_taken_among_the_common_rows_and_moves_named() -> None:
    sleep = [_g("a", 1), _g("only-sleep", 2), _g("b", 3), _g("c", 4)]
    db = {"tfb-db": [("rate=80%", [_g("c", 1, "event-loop"), _g("a", 2), _g("b", 3), _g("only-db", 4)])]}
    [c] = ds.comparisons(_results(sleep, db))
    assert (c.workload, c.point) == ("tfb-db", "rate=80%")
    assert [(m.server, m.sleep_place, m.db_place, m.moved) for m in c.moves] == [
        ("c", 3, 1, "up 2"), ("a", 1, 2, "down 1"), ("b", 2, 3, "down 1")]
    # pairs: (a,b) agree, (a,c) and (b,c) flip → (1 - 2) / 3
    assert abs(c.kendall_tau - (-1 / 3)) < 1e-9
    assert ds.summary(c) == "the orders agree with Kendall's tau -0.33; moved: c (event-loop) up 2, a (m) down 1, b (m) down 1."


def test_nothing_without_stressgrid_or_two_common_measured_rows() -> None:
    assert ds.comparisons(NS(workloads=[NS(name="tfb-db", points=[NS(label="x", groups=[_g("a", 1)])])])) == []
    sleep = [_g("a", 1), _g("b", 2)]
    # b failed under the database (no result): one common row left, no comparison
    assert ds.comparisons(_results(sleep, {"tfb-fortunes": [("p", [_g("a", 1), _g("b", None, measured=False)])]})) == []
    same = ds.comparisons(_results(sleep, {"tfb-queries": [("q=1", [_g("a", 1), _g("b", 2)]),
                                                           ("q=20", [_g("b", 1), _g("a", 2)])]}))
    assert [(c.point, c.kendall_tau) for c in same] == [("q=1", 1.0), ("q=20", -1.0)]
    assert ds.summary(same[0]).endswith("; no row moved.")
