"""stats.py: summary figures, CV and noise, outliers."""
import math

import pytest

from serverbench.results.stats import noisy, outliers, summarize


def test_summarize_known_values() -> None:
    s = summarize([2, 4, 4, 4, 5, 5, 7, 9])
    assert (s.n, s.median, s.mean, s.min, s.max) == (8, 4.5, 5.0, 2.0, 9.0)
    assert s.stdev == pytest.approx(2.138089935, rel=1e-6)  # sample stdev
    assert s.cv == pytest.approx(s.stdev / 5.0)


def test_single_value_and_non_finite() -> None:
    s = summarize([10.0, float("nan")])
    assert (s.n, s.stdev, s.cv) == (1, 0.0, 0.0)
    assert not noisy(s)
    with pytest.raises(ValueError):
        summarize([])


def test_noisy_threshold() -> None:
    assert not noisy(summarize([100, 101, 99]))           # CV 1 %
    assert noisy(summarize([100, 120, 80]))               # CV 20 %
    assert noisy(summarize([100, 104, 96]), threshold=0.03)
    assert not noisy(summarize([100, 104, 96]), threshold=0.05)


def test_outliers_modified_z() -> None:
    assert outliers([100, 101, 99, 100, 60]) == [4]
    assert outliers([100, 101, 99, 100, 98]) == []
    assert outliers([1, 2]) == []                      # too few to judge
    assert outliers([5, 5, 5, 5, 9]) == [4]            # MAD = 0 falls back to mean abs deviation
    assert outliers([5, 5, 5]) == []


def test_group_warnings_name_noise_and_outliers() -> None:
    from serverbench.results.aggregate import Group
    from serverbench.model import CellRecord
    g = Group("w", "p", "s", {}, ok=[CellRecord("s", "w", "p", i, "ok", metrics={"rps": v})
                                      for i, v in enumerate([100, 101, 99, 100, 60], 1)])
    kinds = {w.kind: w.text for w in g.warnings}
    assert "CV" in kinds["noisy"] and kinds["noisy"].startswith("s: ")
    assert "repetition 5 = 60" in kinds["outlier"]
    calm = Group("w", "p", "s", {}, ok=[CellRecord("s", "w", "p", i, "ok", metrics={"rps": v})
                                         for i, v in enumerate([100, 100.5, 99.5], 1)])
    assert calm.warnings == []
    assert not math.isnan(summarize([1, 1, 1]).cv)
