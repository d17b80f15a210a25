"""The db-outage workload's measured run (issue 46, item 4): the load on its own thread while this thread
takes the run's PostgreSQL away at the point's second and brings it back, then the verdicts.

The database is restarted or frozen from the calling thread, the runner's (the main thread): a started
postmaster and the freezing process die with the thread that started them (database/cluster.py), and
this one lives as long as the run. Times are wall-clock and put on the loadgen's axis afterwards by its
own measurement start (`started_at_unix_s`), to within the loadgen's start-up (milliseconds).

During a restart the harness also writes through the row: one `GET /updates?queries=1` at a time, on a
connection of its own, from the load's start to its end, keeping each answer a 200 acknowledged
(`AckedWrites`); afterwards each acknowledged row's last value must be in the table. That is a sample
(a few hundred writes), stated with the figure; the load itself only reads (/db).
"""
from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import psycopg

from ..catalog.workloads import OPEN_LOOP_WARMUP, Point, parse_duration
from ..database.schema import DatabaseError
from ..model import OutageFigures
from ..overtime import outage, timeline
from ..processes.loadgen import LoadgenError, LoadgenResult

R = TypeVar("R")
WRITE_TIMEOUT_S = 3.0
WRITE_GAP_S = 0.05  # between the harness's writes: at most ~20 a second, next to the load's hundreds


def row_reason(db: Any) -> str | None:
    """Why an outage cannot be measured in this run (None: it can)."""
    if db is None or getattr(db, "pg", None) is None:
        return ("the outage workload restarts and freezes a PostgreSQL of the harness's own; an existing database "
                "(--db-url) is not the harness's to take away: run it without --db-url")
    return None


class AckedWrites:
    """The harness's own writes through the row during a restart, and which of them the table lost."""

    def __init__(self, url: str) -> None:
        u = urlsplit(url)
        self.host, self.port = u.hostname or "127.0.0.1", u.port or 80
        self.acked: dict[int, int] = {}  # id → the last randomNumber a 200 acknowledged
        self.count = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="acked-writes", daemon=True)

    def start(self) -> "AckedWrites":
        self._thread.start()
        return self

    def _one(self, conn: http.client.HTTPConnection) -> None:
        conn.request("GET", "/updates?queries=1")
        resp = conn.getresponse()
        body = resp.read()
        if resp.status == 200:
            rows = json.loads(body)
            for row in rows if isinstance(rows, list) else [rows]:
                self.acked[int(row["id"])] = int(row["randomNumber"])
                self.count += 1

    def _loop(self) -> None:
        conn: http.client.HTTPConnection | None = None
        while not self._stop.wait(WRITE_GAP_S):
            try:
                conn = conn or http.client.HTTPConnection(self.host, self.port, timeout=WRITE_TIMEOUT_S)
                self._one(conn)
            except (OSError, http.client.HTTPException, ValueError, KeyError, TypeError):
                if conn is not None:
                    conn.close()
                conn = None  # a new connection for the next write: this one may be half-read
        if conn is not None:
            conn.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=WRITE_TIMEOUT_S + 1)

    def lost(self, admin: dict[str, object]) -> int | None:
        """Acknowledged rows whose value the table does not hold (None: the table could not be read)."""
        if not self.acked:
            return 0
        try:
            with psycopg.connect(**admin, autocommit=True) as c:
                rows = c.execute("SELECT id, randomnumber FROM world WHERE id = ANY(%s)",
                                 (list(self.acked),)).fetchall()
        except psycopg.Error:
            return None
        held = dict(rows)
        return sum(1 for i, v in self.acked.items() if held.get(i) != v)


class OutageRun:
    """One outage point: `alongside(load)` runs the load and the outage; `figures` judges them."""

    def __init__(self, db: Any, point: Point, measure_after: float, url: str) -> None:
        self.db, self.point, self.url = db, point, url
        # the loadgen's own lead before it measures: the in-run warm-up, else open load's pool warm-up
        # (processes/loadgen.py); its process start (milliseconds) is not counted
        self.measure_after = measure_after if measure_after > 0 else (
            parse_duration(OPEN_LOOP_WARMUP) if point.mode == "open" else 0.0)
        self.down: float | None = None  # wall-clock seconds: the database went away
        self.up: float | None = None  # … and was back
        self.writes = AckedWrites(url) if point.outage == "restart" else None

    def alongside(self, load: Callable[[], R]) -> R:
        """`load()` on a thread of its own; meanwhile, on this one, the outage at its second."""
        box: list[Any] = []
        worker = threading.Thread(target=lambda: box.append(_call(load)), name="outage-load", daemon=True)
        t0 = time.time()
        worker.start()
        if self.writes is not None:
            self.writes.start()
        failed: DatabaseError | None = None
        try:
            at = t0 + self.measure_after + parse_duration(self.point.outage_at or "0s")
            worker.join(timeout=max(0.0, at - time.time()))
            if worker.is_alive():
                try:
                    self._take_away()
                except DatabaseError as e:  # the cell fails with it, once its load has ended
                    failed = e
            worker.join()
        finally:
            if self.writes is not None:
                self.writes.stop()
        if failed is not None:
            raise LoadgenError(f"the database did not come back from its {self.point.outage}: {failed}")
        result = box[0] if box else LoadgenError("the load ended without a result")
        if isinstance(result, BaseException):
            raise result
        return result

    def _take_away(self) -> None:
        pg = self.db.pg
        self.down = time.time()
        if self.point.outage == "restart":
            pg.restart()
            self.up = time.time()
            return
        freezer = pg.freeze(parse_duration(self.point.outage_for or "0s"))
        try:
            assert freezer.stdout is not None
            if freezer.stdout.readline().strip() == "frozen":
                self.down = time.time()
            freezer.stdout.readline()  # "thawed", or nothing if it was stopped
            self.up = time.time()
        finally:
            if freezer.poll() is None:
                freezer.terminate()  # its SIGTERM continues whatever it stopped
            freezer.wait()

    def figures(self, lg: LoadgenResult | None, died_at_s: float | None) -> OutageFigures:
        """The cell's outage figures: the verdicts (when the outage happened inside the measured run)
        and the acknowledged writes."""
        acked = lost = None
        if self.writes is not None:
            acked, lost = len(self.writes.acked), self.writes.lost(self.db.pg.admin())
        report = lg.report if lg is not None else None
        start = (report.model_extra or {}).get("started_at_unix_s") if report is not None else None
        if not start or self.down is None or self.up is None:
            return OutageFigures(outage_shape=self.point.outage, acknowledged_writes=acked, lost_writes=lost)
        verdict = outage.judge(timeline.load_seconds(report), self.point.outage or "", self.down - float(start),
                               self.up - float(start), died_at_s)
        if verdict is None:
            return OutageFigures(outage_shape=self.point.outage, acknowledged_writes=acked, lost_writes=lost)
        return verdict.cell_figures(acked, lost)


def _call(load: Callable[[], R]) -> R | BaseException:
    try:
        return load()
    except BaseException as e:  # handed to the calling thread, which raises it
        return e


__all__ = ["OutageRun", "AckedWrites", "row_reason"]
