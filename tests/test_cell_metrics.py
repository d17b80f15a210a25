"""CellMetrics is stored flat (`metrics_json`, one key per figure) and read grouped: a stored row must
load and dump back to the very same dict, keys and order, so a run stored before the figures were
grouped reads, exports and is rewritten byte for byte as it was."""
from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ValidationError

from serverbench.model import CellMetrics

# One cell as an older store holds it: every figure a loadgen closed-load cell and a warmed first point
# write, in the order they were written (the order of the old flat record's fields).
OLD_ROW = {
    "kind": "throughput", "rps": 51234.5, "responses_rps": 51300.1, "requests": 768000, "ok": 767000,
    "errors": 1000, "due": 768010, "timeouts": 3, "error_classes": {"timeout": 3, "status": 997},
    "p50_us": 610.0, "p75_us": 700.0, "p90_us": 820.0, "p99_us": 1900.0, "p999_us": 4100.0, "p9999_us": 8000.0,
    "max_us": 12000.0, "mean_us": 650.5, "answered_p50_us": 600.0, "answered_p99_us": 1800.0, "duration_s": 15.0,
    "missed_sends": 0, "unanswered": 2, "unanswered_oldest_us": 1500000.0, "connections": 64,
    "client_cpu_percent": 88.1, "client_saturated": False, "harness_cpu_percent": 4.2,
    "cpu_user_s": 10.5, "cpu_sys_s": 4.25, "cpu_percent": 98.0, "cpu_percent_peak": 101.0,
    "rss_peak_bytes": 50331648, "rss_mean_bytes": 41943040, "threads_peak": 9, "processes_peak": 1,
    "ctx_voluntary": 1200, "ctx_involuntary": 300, "series_offset_s": 0.4, "rss_start_bytes": 40000000,
    "rss_end_bytes": 41000000, "others_cpu_percent": 3.5, "workers": 2, "bound": 256, "warmup_s": 5.0,
    "planned_s": 15.0, "warmup_rates": [30000.0, 50000.0, 51000.0, 51200.0], "warmup_steady": True,
    "warmup_brief": False, "warmup_steady_s": 4.0, "warmup_first_share": 0.587, "warmup_max_s": 20.0,
    "fairness": {"slots": 64, "served": 64, "completed_sum": 768000, "completed_sum_sq": 9.3e9, "jain": 0.99,
                 "longest_wait_us": 20000.0, "waited_over_timeout": 0, "served_per_s": [64, 64]},
    "overhead_s": 0.8, "server_start_s": 0.31, "ready_timeout_s": 30.0,
}


def test_an_old_flat_row_round_trips_to_the_identical_dict() -> None:
    m = CellMetrics.load(json.loads(json.dumps(OLD_ROW)))
    assert m.dump() == OLD_ROW
    assert json.dumps(m.dump()) == json.dumps(OLD_ROW)  # the same keys in the same order: the same bytes
    # read grouped, each figure under what it describes
    assert m.counts.rps == 51234.5 and m.counts.error_share == pytest.approx(1000 / 768000)
    assert m.latency.p99_us == 1900.0 and m.usage.cpu_sys_s == 4.25 and m.warmup.warmup_steady_s == 4.0
    assert m.offered.connections == 64 and m.client.client_cpu_percent == 88.1 and m.timing.server_start_s == 0.31
    assert m.fairness is not None and m.fairness.slots == 64


def test_every_stored_key_belongs_to_exactly_one_place() -> None:
    leaves = [k for name, v in CellMetrics() for k in (type(v).model_fields if isinstance(v, BaseModel) else [name])]
    assert len(leaves) == len(set(leaves)) == len(CellMetrics.flat_keys())  # no figure's name in two groups
    assert list(CellMetrics().model_dump()) == CellMetrics.flat_keys()  # stored flat, in order: no group's name
    assert CellMetrics().dump() == {"error_classes": {}, "missed_sends": 0, "unanswered": 0,
                                    "unanswered_oldest_us": 0, "client_saturated": False}  # defaults; None left out


def test_keys_this_version_does_not_know_are_dropped_on_load_and_refused_otherwise() -> None:
    assert CellMetrics.load({**OLD_ROW, "retired_figure": 1}).dump() == OLD_ROW
    with pytest.raises(ValidationError):
        CellMetrics.model_validate({"rps": 1.0, "retired_figure": 1})


def test_a_group_given_whole_and_flat_keys_of_it_are_merged() -> None:
    m = CellMetrics.model_validate({"client": {"client_cpu_percent": 50.0}, "shards": 2})
    assert (m.client.client_cpu_percent, m.client.shards) == (50.0, 2)
    assert m.updated({"server_cores": 4}).setup.server_cores == 4 and m.setup.server_cores is None
