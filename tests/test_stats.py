"""stats.py: summary figures, CV and noise, outliers."""
import math

import pytest

from serverbench.stats import noisy, outliers, summarize, warnings_for


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


def test_warnings_name_the_cell() -> None:
    w = warnings_for("s · w · p", [100, 101, 99, 100, 60], "rps")
    assert any("CV" in x and "s · w · p" in x for x in w)
    assert any("outliers" in x for x in w)
    assert warnings_for("x", [100, 100.5, 99.5]) == []
    assert not math.isnan(summarize([1, 1, 1]).cv)
