"""Installing missing toolchains from each manifest's `[install]` table.

apt packages system-wide, npm packages into `.tools/` with their executables
linked into `.tools/bin` (which is first on every server's PATH). Only as root:
otherwise the commands are returned for the user to run, and nothing is done.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from serverbench.catalog import doctor
from serverbench import paths
from serverbench.catalog.manifests import Manifest

INSTALL_TIMEOUT_S = 30 * 60


def _run(cmd: list[str], log: Path, env: dict[str, str] | None = None) -> tuple[bool, str]:
    """Run `cmd`, appending its output to `log`; (ok, last lines)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as f:
        f.write(("$ " + " ".join(cmd) + "\n").encode())
        f.flush()
        try:
            rc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                                env=env, timeout=INSTALL_TIMEOUT_S).returncode
        except (OSError, subprocess.TimeoutExpired) as e:
            return False, str(e)
    tail = log.read_text(errors="replace").splitlines()[-5:]
    return rc == 0, " | ".join(tail)


def link_npm_bins() -> list[str]:
    """Symlink every executable of .tools/node_modules/.bin into .tools/bin; the names linked."""
    src = paths.TOOLS / "node_modules" / ".bin"
    if not src.is_dir():
        return []
    paths.TOOLS_BIN.mkdir(parents=True, exist_ok=True)
    linked = []
    for entry in sorted(src.iterdir()):
        dest = paths.TOOLS_BIN / entry.name
        if dest.is_symlink() or dest.exists():
            dest.unlink()
        dest.symlink_to(entry.resolve())
        linked.append(entry.name)
    return linked


def install_missing(ms: list[Manifest], *, dry_run: bool) -> list[str]:
    """Install what the unavailable servers among `ms` need; human-readable messages."""
    todo = [(m, a) for m in ms if not (a := doctor.check(m)).available]
    if not todo:
        return ["every selected server's toolchain is already available"]
    apt = list(dict.fromkeys(p for m, _ in todo for p in m.install.apt))
    npm = list(dict.fromkeys(p for m, _ in todo for p in m.install.npm))
    msgs: list[str] = []
    for m, a in todo:
        if not m.install.apt and not m.install.npm:
            msgs.append(f"{m.id}: missing {', '.join(a.missing)} and server.toml has no [install] "
                        f"table; fix: install it by hand or add [install] apt/npm entries")
    apt_cmds = [["apt-get", "update"],
                ["apt-get", "install", "-y", "--no-install-recommends", *apt]] if apt else []
    npm_cmd = (["npm", "install", "--prefix", str(paths.TOOLS), "--no-audit", "--no-fund", *npm]
               if npm else None)
    planned = [*apt_cmds, *([npm_cmd] if npm_cmd else [])]
    if dry_run or not doctor.is_root():
        prefix = "would run" if dry_run else "not root, skipped; run"
        sudo = "" if dry_run or doctor.is_root() else "sudo "
        for cmd in planned:
            s = " ".join(cmd)
            msgs.append(f"{prefix}: {sudo if cmd[0] == 'apt-get' else ''}{s}")
        return msgs

    log = paths.LOGS / "install.log"
    if apt:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for cmd in apt_cmds:
            ok, tail = _run(cmd, log, env)
            if not ok:
                msgs.append(f"`{' '.join(cmd)}` failed ({tail}); see {log}")
                break
        else:
            msgs.append(f"installed Debian packages: {' '.join(apt)}")
    if npm_cmd:
        if shutil.which("npm") is None:
            msgs.append(f"npm not found, skipped npm packages {' '.join(npm)}; "
                        f"fix: apt-get install -y npm")
        else:
            paths.TOOLS.mkdir(parents=True, exist_ok=True)
            ok, tail = _run(npm_cmd, log)
            if ok:
                linked = link_npm_bins()
                msgs.append(f"installed npm packages into {paths.TOOLS}: {' '.join(npm)}; "
                            f"linked {', '.join(linked) or 'nothing'} into {paths.TOOLS_BIN}")
            else:
                msgs.append(f"`{' '.join(npm_cmd)}` failed ({tail}); see {log}")
    doctor.clear_cache()
    for m, _ in todo:
        a = doctor.check(m)
        msgs.append(f"{m.id}: now available ({a.version or 'version unknown'})" if a.available
                    else f"{m.id}: still unavailable ({a.reason})")
    return msgs
