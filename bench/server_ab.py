#!/usr/bin/env python3
"""A/B one contestant against itself at another git revision (did a change slow it down?).

    .venv/bin/python bench/server_ab.py rust-tokio HEAD~3 [--rounds 5] [--duration 5] [-c 50]

Builds the server as it is at REV in a temporary git worktree (its own cargo target dir),
then alternates the two builds round by round — the order rotates — each started fresh,
pinned like `serverbench run` (server on the first CPU set, loadgen on the other), warmed
up for 2 s, then measured with closed load. Prints the median requests/s and p99 of both and
the ratio working-tree/REV. Single rounds vary by ~±10 % here, so read medians, not rounds.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from serverbench.catalog import build, manifests as catalog
from serverbench import paths
from serverbench.processes import supervisor
from serverbench.catalog.manifests import Manifest


def loadgen(url: str, seconds: float, connections: int, cpus: list[int]) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = [str(paths.loadgen_binary()), url, "-c", str(connections), "-d", f"{seconds}s",
               "--threads", str(len(cpus)), "--quiet", "--json", out.name]
        subprocess.run(supervisor.pinned(cmd, cpus), check=True, stdout=subprocess.DEVNULL,
                       timeout=seconds + 30)
        return json.load(open(out.name))


def measure(m: Manifest, args: argparse.Namespace, s_cpus: list[int], c_cpus: list[int]) -> tuple[float, float]:
    with supervisor.run_server(m, cpus=s_cpus) as srv:
        loadgen(srv.url + "/", 2, args.connections, c_cpus)  # warm-up, not recorded
        d = loadgen(srv.url + "/", args.duration, args.connections, c_cpus)
        if not srv.alive():
            sys.exit(f"{m.id} exited during the measurement; see {srv.log_path}")
    return float(d["summary"]["rps"]), float(d["summary"]["latency_us"]["p99"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("server")
    ap.add_argument("rev", help="the git revision to compare the working tree with")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("-c", "--connections", type=int, default=50)
    args = ap.parse_args()

    new = catalog.load_catalog().servers.get(args.server)
    if new is None:
        sys.exit(f"unknown server '{args.server}'; see `serverbench list`")
    if not build.is_built(new) and build.build([new], progress=False)[0].status != "built":
        sys.exit(f"cannot build {args.server} from the working tree; see results/logs/")
    tmp = Path(tempfile.mkdtemp(prefix="serverbench-ab-"))
    tree = tmp / "tree"
    try:
        subprocess.run(["git", "-C", str(paths.REPO), "worktree", "add", "-q", "--detach", str(tree), args.rev],
                       check=True)
        old = catalog.load_catalog(tree / "servers").servers.get(args.server)
        if old is None:
            sys.exit(f"{args.server} does not exist at {args.rev}")
        # Its own cargo target dir, so the baseline does not overwrite the working tree's binary.
        old = old.model_copy(update={"env": {**old.env, "CARGO_TARGET_DIR": str(tmp / "cargo-target")}})
        env = build.server_env(old)
        print(f"building {args.server} at {args.rev} …", flush=True)
        done = subprocess.run(["/bin/sh", "-c", old.build], cwd=old.dir, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"build of {args.server} at {args.rev} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")

        s_cpus, c_cpus = supervisor.default_cpu_split()
        print(f"server CPUs {s_cpus}, loadgen CPUs {c_cpus}; {args.rounds} rounds of "
              f"{args.duration:g} s at {args.connections} connections")
        results: dict[str, list[tuple[float, float]]] = {args.rev: [], "working tree": []}
        pair = [(args.rev, old), ("working tree", new)]
        for r in range(args.rounds):
            line = []
            for label, m in (pair if r % 2 == 0 else pair[::-1]):
                rps, p99 = measure(m, args, s_cpus, c_cpus)
                results[label].append((rps, p99))
                line.append(f"{label} {rps:,.0f} req/s p99 {p99 / 1000:.2f} ms")
            print(f"round {r + 1}:  " + "   ".join(line), flush=True)
        med = {k: (statistics.median(x for x, _ in v), statistics.median(p for _, p in v)) for k, v in results.items()}
        for k, (rps, p99) in med.items():
            print(f"{k:>14}  median {rps:,.0f} req/s  p99 {p99 / 1000:.2f} ms")
        a, b = med[args.rev], med["working tree"]
        print(f"ratio working tree / {args.rev}:  req/s {b[0] / a[0]:.3f}   p99 {b[1] / a[1]:.3f}")
    finally:
        subprocess.run(["git", "-C", str(paths.REPO), "worktree", "remove", "--force", str(tree)],
                       stderr=subprocess.DEVNULL)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
