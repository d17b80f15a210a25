"""Build then verify, the step before every measuring command (`bench`, `seeds --measure`, `study`):
install what is missing, build, verify each row as its build ends; the rows that may be measured.

On the 2-core machine a fresh clone's builds took 7.2 min and verify 4.5 min one after the other, so
verify runs beside the builds (which are niced), and a row whose check failed under their load is
verified again once they have ended.
"""
from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from rich.console import Console

from ..catalog import build, doctor, install
from ..rules.admission import KINDS
from .show import verify_twice

# Builds go beside verify at this much lower priority: verify's servers and checks run first, as on a
# quiet machine, and the builds take what they leave.
BUILD_NICE = 10


class NothingPassed(Exception):
    """No row passed verify: there is nothing to measure."""


def prepare(manifests: list[Any], store: Any, out: Console | None = None, err: Console | None = None,
            features: Iterable[str] | None = None) -> list[Any]:
    """What `bench` and `seeds --measure` do before measuring: install the missing toolchains (as
    root; otherwise print the commands), build, verify; the manifests that passed, each one left out
    said in one line on `out`. NothingPassed when none passed.

    Each row is verified as soon as its build ends, while the other builds go on (niced): on the
    2-core machine a fresh clone's builds took 7.2 min and verify 4.5 min one after the other, and
    the cargo rows (one at a time on their shared target) kept the builds going long after most rows
    were built. A check's time limit could still be missed under the builds' load, so a row with any
    failed check is verified again once the builds have ended, and that verdict is the one shown.
    `features`: what the loads to be measured use; only those feature checks run (all when None), and a
    line says which were left to `serverbench verify`."""
    out, err = out or Console(), err or Console(stderr=True)
    if doctor.is_root():
        for line in install.install_missing(manifests, dry_run=False):
            out.print(line)
        doctor.clear_cache()
    else:
        for line in install.install_missing(manifests, dry_run=True):
            out.print(f"[yellow]not root; to install run:[/] {line}")
    avail = [m for m in manifests if doctor.check(m).available]
    for m in manifests:
        if m not in avail:
            out.print(f"[yellow]skip {m.id}: toolchain unavailable[/]")
    if features is not None:
        left = sorted({k.feature for k in KINDS.values() if k.kind == "feature" and k.feature} - set(features))
        out.print(f"[dim]verify runs the checks these loads need; the {', '.join(left)} checks are left to "
                  f"`serverbench verify` (a workload using one keeps a row out until they have run)[/]")
    built = _built_as_they_end(avail, out, err)
    try:
        passed, failed = verify_twice(
            avail, store, stream=built, out=out, err=err, server_cpus=None, allow_unavailable=True, compact=True,
            features=features, note="verifying again the checks that failed, now that the builds have ended (a "
                                    "check may miss its time limit under their load)")
    finally:
        built.close()  # on an error or Ctrl-C in verify: the builds stopped now, not when collected
    if failed:
        out.print(f"[yellow]not measured (failed verify): {', '.join(failed)}[/]")
    if not passed:
        raise NothingPassed("no server passed verify; nothing to measure")
    return [m for m in avail if m.id in passed]


def _built_as_they_end(avail: list[Any], out: Console, err: Console) -> Iterator[Any]:
    """Build `avail` on a thread of its own (niced); yield each manifest as its build ends (or is
    found up to date), saying in one line each one whose build failed. A consumer that stops early
    (Ctrl-C, an error) stops the builds: none is left running."""
    ends: queue.Queue[Any] = queue.Queue()
    by_id = {m.id: m for m in avail}
    broke: list[BaseException] = []  # what build() raised on its thread, raised again here

    def builds() -> None:
        try:
            build.build(avail, console=err, nice=BUILD_NICE, on_result=ends.put)
        except BaseException as e:  # noqa: BLE001 - handed to the consumer's thread below
            broke.append(e)
        finally:
            ends.put(None)

    worker = threading.Thread(target=builds, name="builds", daemon=True)
    worker.start()
    try:
        while (r := ends.get()) is not None:
            if r.status in ("built", "cached"):
                yield by_id[r.id]
            else:
                out.print(f"[yellow]skip {r.id}: build failed (see `serverbench build {r.id}`)[/]")
        if broke:
            raise broke[0]
    finally:
        if worker.is_alive():
            build.stop_builds()
        worker.join()


__all__ = ["BUILD_NICE", "NothingPassed", "prepare"]
