#!/usr/bin/env bash
# Harness overhead per cell: wall time of a cell minus the time the loadgen actually ran
# (warm-up + measured). Runs a few short cells against a fast server into a throw-away DB.
#   SERVER=rust-tokio bench/harness_overhead.sh     (default: first built of rust-tokio,
#                                                    go-nethttp, else the Python test fixture)
# Uses the real loadgen (loadgen/target/release/loadgen or $SERVERBENCH_LOADGEN) when present,
# else the fake one from tests/fixtures/run. Target: < 1.5 s per cell.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'PY'
import atexit, os, shutil, statistics, sys, tempfile
from pathlib import Path
from rich.console import Console

sys.path.insert(0, "tests/fixtures/run")
from serverbench import build, catalog, doctor, paths, workloads as wl
from serverbench.run.runner import RunOptions, run_matrix
from serverbench.store import Store

TARGET_S = 1.5
tmp = Path(tempfile.mkdtemp(prefix="serverbench-overhead-"))
atexit.register(shutil.rmtree, tmp, True)
if not paths.loadgen_binary().is_file():
    import runfix
    print(f"real loadgen not built ({paths.loadgen_binary()}); using the fake loadgen "
          "(a Python process: its ~0.5 s start-up, twice per cell, counts as overhead)")
    os.environ["SERVERBENCH_LOADGEN"] = str(runfix.fake_loadgen(tmp))
    os.environ["FAKE_LOADGEN_MAX_S"] = "1"

want = os.environ.get("SERVER")
real = catalog.load_catalog().servers
fixture = catalog.load_catalog(Path("tests/fixtures/run/servers")).servers
def usable(m): return doctor.check(m).available and build.is_built(m)
if want:
    m = {**fixture, **real}[want]
else:
    m = next((real[i] for i in ("rust-tokio", "go-nethttp") if i in real and usable(real[i])), fixture["py-ok"])

(tmp / "w").mkdir()
(tmp / "w" / "overhead.toml").write_text("""
name = "overhead"
description = "short closed points to measure the harness's own time per cell"
origin = "serverbench"
[quick]
warmup = "500ms"
""" + "".join(f"""[[quick.points]]
label = "c={c}"
connections = {c}
duration = "1s"
""" for c in (1, 16, 64, 256)) + """[full]
[[full.points]]
label = "c=1"
connections = 1
duration = "1s"
""")
w = wl.load_workloads(tmp / "w")["overhead"]
store = Store(tmp / "overhead.db")
console = Console()
res = run_matrix(store, RunOptions(servers=[m.id], workloads=["overhead"], repeat=2, allow_unverified=True),
                 manifests=[m], workloads=[w], console=Console(file=open(os.devnull, "w")), progress=False,
                 fingerprint={"bench": "harness_overhead"})
cells = store.cells(res.run_id)
print(f"server {m.id}, loadgen {paths.loadgen_binary()}")
print(f"{'cell':<28}{'status':<8}{'loadgen ran s':>14}{'overhead s':>12}")
for c in cells:
    ran = c.metrics.get("duration_s")
    print(f"{c.point + ' r' + str(c.repetition):<28}{c.status:<8}{(ran or 0):>14.3f}{c.metrics['overhead_s']:>12.3f}")
ov = [c.metrics["overhead_s"] for c in cells if c.status == "ok"]
if not ov:
    sys.exit("no cell succeeded; see the errors above")
verdict = "OK" if max(ov) < TARGET_S else "OVER TARGET"
print(f"overhead per cell: median {statistics.median(ov):.3f} s, max {max(ov):.3f} s "
      f"(target < {TARGET_S} s): {verdict}")
print(f"(server start-up is not counted: server_start_s = {cells[0].metrics.get('server_start_s')} s)")
sys.exit(0 if verdict == "OK" else 1)
PY
