"""`serverbench bundle` with wheels: the bundle installs on a machine whose pip has no index.

The first test fetches the harness's wheels from PyPI (skipped, saying so, where PyPI does not answer),
unpacks the bundle into a fresh folder, makes a fresh venv there and installs with the index switched
off; the bundled harness then answers from that venv. The others run offline: sdist-only packages
served from a local folder (a pure one is built into a wheel, a platform one is refused), a package
that does not exist, an index that refuses connections (no bundle left behind), and bad --python.
"""
from __future__ import annotations

import base64
import hashlib
import io
import os
import socket
import subprocess
import sys
import tarfile
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from serverbench import paths
from serverbench.catalog import build, bundle, doctor, manifests as catalog, wheels

ROW = "c-epoll"  # the quickest row to build where it is not built yet
TARGET = wheels.WheelTarget("3.12", ("manylinux2014_x86_64",))


def _built_row() -> list:
    ms = catalog.select(catalog.load_catalog(), [ROW])
    if not build.is_built(ms[0]):
        a = doctor.check(ms[0], "build")
        if not a.available:
            pytest.skip(f"{ROW} is not built and cannot be built here ({a.reason})")
        bad = [r for r in build.build(ms, progress=False) if r.status not in ("built", "cached")]
        assert not bad, f"building {ROW} for the bundle test failed: {bad[0].error}"
    return ms


def _offline_pip_env(find_links: Path | None = None) -> dict[str, str]:
    """This environment without pip's settings (here PIP_FIND_LINKS names a folder of wheels, which would
    let an install succeed without the bundle's), no config files, and the index off."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k != "PYTHONPATH"}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    if find_links is not None:
        env["PIP_FIND_LINKS"] = str(find_links)
    return env


def _use_env(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    """Make `env` this process's environment, which the pip that wheels.py starts inherits."""
    for k in [k for k in os.environ if k not in env]:
        monkeypatch.delenv(k)
    for k, v in env.items():
        monkeypatch.setenv(k, v)


def _pypi_unreachable() -> str | None:
    url = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/") + "/pip/"
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=15).close()
        return None
    except (urllib.error.URLError, OSError) as e:
        return f"the package index {url} does not answer from here ({e}); this test fetches wheels from it"


@pytest.mark.timeout(900)  # pip download, then a venv and an offline install on a shared 2-core machine
def test_a_bundle_with_wheels_installs_and_runs_with_the_index_off(tmp_path: Path) -> None:
    if (why := _pypi_unreachable()) is not None:
        pytest.skip(why)
    ms = _built_row()
    out = tmp_path / "bench.tar.zst"
    lines: list[str] = []
    tgt = wheels.target(None, None)
    assert tgt.python == f"{sys.version_info.major}.{sys.version_info.minor}"
    summary = bundle.write_bundle(out, ms, tgt, progress=lines.append)
    assert summary.rows == [ROW] and summary.wheels > 0
    assert any(ln.startswith("fetching wheels for CPython") for ln in lines) and any("writing" in ln for ln in lines)

    dest = tmp_path / "fresh" / "bench"
    bundle.extract(out, dest)
    shipped = {p.name for p in (dest / bundle.WHEELS).iterdir()}
    # every dependency and the editable install's build backend, by distribution name
    names = {n.split("-")[0].lower().replace("_", "-") for n in shipped}
    for req in wheels.requirements():
        name = wheels.PROJECT_NAME.match(req)[0].lower().replace("_", "-")
        assert name in names, f"{name} has no wheel in the bundle: {sorted(shipped)}"
    readme = (dest / bundle.INSTRUCTIONS).read_text()
    assert "pip install --no-index --find-links wheels -e ." in readme and ROW in readme

    env = _offline_pip_env()
    subprocess.run([sys.executable, "-m", "venv", str(dest / ".venv")], check=True, timeout=300)
    pip = subprocess.run([str(dest / ".venv/bin/pip"), "install", "--no-index", "--find-links", "wheels", "-e", "."],
                         cwd=dest, env=env, capture_output=True, text=True, timeout=700)
    assert pip.returncode == 0, pip.stdout[-3000:] + pip.stderr[-3000:]
    exe = dest / ".venv/bin/serverbench"
    r = subprocess.run([str(exe), "version"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("serverbench "), r.stdout + r.stderr
    # the bundle's own tree answers, with its rows: not this checkout
    r = subprocess.run([str(exe), "list"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and ROW in r.stdout, r.stdout + r.stderr
    where = subprocess.run([str(dest / ".venv/bin/python"), "-c", "from serverbench import paths; print(paths.REPO)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert Path(where.stdout.strip()) == dest, where


BACKEND = '''\
import base64, hashlib, os, zipfile
NAME, VERSION, TAG, DEPS = {name!r}, "1.0", {tag!r}, {deps!r}
INFO = f"{{NAME}}-{{VERSION}}.dist-info"
META = f"Metadata-Version: 2.1\\nName: {{NAME}}\\nVersion: {{VERSION}}\\n" + "".join(f"Requires-Dist: {{d}}\\n" for d in DEPS)

def prepare_metadata_for_build_wheel(directory, config_settings=None):
    os.makedirs(os.path.join(directory, INFO))
    with open(os.path.join(directory, INFO, "METADATA"), "w") as f:
        f.write(META)
    return INFO

def build_wheel(directory, config_settings=None, metadata_directory=None):
    pure = "true" if TAG.endswith("none-any") else "false"
    files = {{f"{{NAME}}.py": b"VALUE = 1\\n", f"{{INFO}}/METADATA": META.encode(),
             f"{{INFO}}/WHEEL": f"Wheel-Version: 1.0\\nGenerator: toy\\nRoot-Is-Purelib: {{pure}}\\nTag: {{TAG}}\\n".encode()}}
    record = [f"{{p}},sha256={{base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()}},{{len(d)}}"
              for p, d in files.items()] + [f"{{INFO}}/RECORD,,"]
    name = f"{{NAME}}-{{VERSION}}-{{TAG}}.whl"
    with zipfile.ZipFile(os.path.join(directory, name), "w") as z:
        for p, d in files.items():
            z.writestr(p, d)
        z.writestr(f"{{INFO}}/RECORD", "\\n".join(record) + "\\n")
    return name
'''


def _sdist(folder: Path, name: str, tag: str = "py3-none-any", deps: tuple[str, ...] = ()) -> None:
    """An sdist of `name` 1.0 whose in-tree build backend needs nothing from an index and writes a wheel
    tagged `tag`: a package published without wheels, served from `folder`."""
    folder.mkdir(exist_ok=True)
    top = f"{name}-1.0"
    files = {
        "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n',
        "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
        "backend.py": BACKEND.format(name=name, tag=tag, deps=list(deps)),
    }
    with tarfile.open(folder / f"{top}.tar.gz", "w:gz") as tar:
        for rel, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{rel}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


@pytest.mark.timeout(300)
def test_pure_python_sdists_are_built_into_wheels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = tmp_path / "index"
    _sdist(index, "toyapp", deps=("toydep",))  # its dependency is sdist-only too: two rounds
    _sdist(index, "toydep")
    _use_env(monkeypatch, _offline_pip_env(find_links=index))
    lines: list[str] = []
    got = wheels.fetch(tmp_path / "wheels", TARGET, tmp_path / "work", lines.append, reqs=["toyapp"])
    assert [w.name for w in got] == ["toyapp-1.0-py3-none-any.whl", "toydep-1.0-py3-none-any.whl"]
    assert [ln.split(":")[0] for ln in lines if "from its sdist" in ln] == ["toyapp", "toydep"]


@pytest.mark.timeout(300)
def test_a_platform_sdist_or_a_missing_package_is_one_line_naming_it(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    index = tmp_path / "index"
    _sdist(index, "toyext", tag="cp311-cp311-linux_x86_64")
    _use_env(monkeypatch, _offline_pip_env(find_links=index))
    with pytest.raises(wheels.WheelError, match=r"^toyext has no wheel for CPython 3\.12 .* is not pure Python .*fix:"):
        wheels.fetch(tmp_path / "w1", TARGET, tmp_path / "work1", lambda _: None, reqs=["toyext"])
    with pytest.raises(wheels.WheelError, match=r"^nosuchpkg has neither a wheel .* nor an sdist; fix:"):
        wheels.fetch(tmp_path / "w2", TARGET, tmp_path / "work2", lambda _: None, reqs=["nosuchpkg"])


@pytest.mark.timeout(300)
def test_an_index_out_of_reach_stops_the_bundle_and_leaves_nothing(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    ms = _built_row()
    with socket.socket() as s:  # a loopback port nothing listens on: connections are refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = _offline_pip_env()
    del env["PIP_NO_INDEX"]
    env.update(PIP_INDEX_URL=f"http://127.0.0.1:{port}/simple", PIP_RETRIES="0")
    _use_env(monkeypatch, env)
    out = tmp_path / "bench.tar.zst"
    with pytest.raises(bundle.BundleError, match=r"^pip could not reach the package index while fetching typer"
                                                 r".*; fix: .*--no-wheels"):
        bundle.write_bundle(out, ms, TARGET)
    assert list(tmp_path.iterdir()) == []


def test_the_target_python_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(wheels.WheelError, match=r"--python 3\.10: the harness needs Python ≥ 3\.11; fix"):
        wheels.target("3.10", ["manylinux2014_x86_64"])
    with pytest.raises(wheels.WheelError, match=r"--python three: .*fix: e\.g\. --python 3\.\d+"):
        wheels.target("three", ["manylinux2014_x86_64"])
    assert wheels.target("3.13", ["manylinux_2_28_aarch64"]) == wheels.WheelTarget("3.13", ("manylinux_2_28_aarch64",))
    monkeypatch.setattr(wheels.platform, "libc_ver", lambda: ("glibc", "2.31"))
    monkeypatch.setattr(wheels.platform, "machine", lambda: "x86_64")
    tags = wheels.default_platforms()
    assert tags[0] == "manylinux_2_31_x86_64" and "manylinux_2_17_x86_64" in tags and tags[-1] == "manylinux2014_x86_64"
    monkeypatch.setattr(wheels.platform, "libc_ver", lambda: ("", ""))
    with pytest.raises(wheels.WheelError, match=r"not Linux with glibc .*fix: name it, e\.g\. --platform"):
        wheels.default_platforms()
