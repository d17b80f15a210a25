"""Toolchain checks, install planning, and the lifecycle CLI commands."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rich.console import Console

from serverbench import paths
from serverbench.cli import lifecycle as cli
from serverbench.catalog import doctor
from serverbench.catalog.manifests import load_catalog
from serverbench.cli import app
from serverbench.catalog.install import install_missing, link_npm_bins

from conftest import write_manifest


@pytest.fixture(autouse=True)
def fresh_version_cache():
    doctor.clear_cache()
    yield
    doctor.clear_cache()


def load(root: Path, sid: str):
    return load_catalog(root).servers[sid]


def test_available_with_version(servers_root, sandbox_paths) -> None:
    write_manifest(servers_root, "py", requires=["sh"], version="echo 'Toolchain 1.2.3'; echo more")
    a = doctor.check(load(servers_root, "py"))
    assert (a.id, a.available, a.missing, a.version) == ("py", True, [], "Toolchain 1.2.3")
    assert a.install_hint is None and a.reason is None


def test_missing_tool_gives_install_hint(servers_root, sandbox_paths) -> None:
    write_manifest(servers_root, "deno", requires=["sh", "serverbench-no-such-deno"],
                   install={"apt": ["nodejs"], "npm": ["deno@2.5.6"]})
    a = doctor.check(load(servers_root, "deno"))
    assert not a.available and a.missing == ["serverbench-no-such-deno"] and a.version is None
    assert "apt-get install -y nodejs" in a.install_hint
    assert "npm install --prefix .tools deno@2.5.6" in a.install_hint
    assert a.reason == "missing: serverbench-no-such-deno"


def test_tools_bin_is_searched_first(servers_root, sandbox_paths) -> None:
    paths.TOOLS_BIN.mkdir(parents=True)
    tool = paths.TOOLS_BIN / "sbtool"
    tool.write_text("#!/bin/sh\necho sbtool 9.9\n")
    tool.chmod(0o755)
    write_manifest(servers_root, "t", requires=["sbtool"], version="sbtool --version")
    a = doctor.check(load(servers_root, "t"))
    assert a.available and a.version == "sbtool 9.9"


def test_version_on_stderr_failure_and_cache(servers_root, sandbox_paths, tmp_path) -> None:
    write_manifest(servers_root, "java", version="echo 'openjdk 17.0.1' >&2")
    assert doctor.check(load(servers_root, "java")).version == "openjdk 17.0.1"

    write_manifest(servers_root, "bad", version="echo nope >&2; exit 4")
    a = doctor.check(load(servers_root, "bad"))
    assert a.available and a.version is None
    assert "failed with exit code 4: nope" in a.reason

    counter = tmp_path / "calls"
    write_manifest(servers_root, "cached", version=f"echo x >> '{counter}'; echo v1")
    m = load(servers_root, "cached")
    assert [doctor.check(m).version for _ in range(3)] == ["v1"] * 3
    assert counter.read_text().count("x") == 1, "version runs once per process"


def test_install_dry_run_plans_commands(servers_root, sandbox_paths) -> None:
    write_manifest(servers_root, "have", requires=["sh"])
    write_manifest(servers_root, "need", requires=["serverbench-no-such-bun"],
                   install={"apt": ["unzip"], "npm": ["bun@1.2.0"]})
    write_manifest(servers_root, "need2", requires=["serverbench-no-such-x"],
                   install={"apt": ["unzip", "curl"]})
    write_manifest(servers_root, "nohow", requires=["serverbench-no-such-y"])
    cat = load_catalog(servers_root)
    msgs = install_missing(list(cat.servers.values()), dry_run=True)
    assert "would run: apt-get update" in msgs
    assert "would run: apt-get install -y --no-install-recommends unzip curl" in msgs
    assert f"would run: npm install --prefix {paths.TOOLS} --no-audit --no-fund bun@1.2.0" in msgs
    assert any(m.startswith("nohow: missing serverbench-no-such-y and server.toml has no [install]")
               for m in msgs)
    assert install_missing([cat.servers["have"]], dry_run=True) == [
        "every selected server's toolchain is already available"]


def test_npm_bins_are_linked(sandbox_paths) -> None:
    pkg_bin = paths.TOOLS / "node_modules" / "fakepkg" / "bin"
    pkg_bin.mkdir(parents=True)
    (pkg_bin / "fake").write_text("#!/bin/sh\necho fake 1.0\n")
    (pkg_bin / "fake").chmod(0o755)
    dot_bin = paths.TOOLS / "node_modules" / ".bin"
    dot_bin.mkdir()
    (dot_bin / "fake").symlink_to("../fakepkg/bin/fake")
    assert link_npm_bins() == ["fake"]
    assert link_npm_bins() == ["fake"], "relinking is idempotent"
    linked = paths.TOOLS_BIN / "fake"
    assert linked.is_symlink() and os.access(linked, os.X_OK)
    assert linked.resolve() == (pkg_bin / "fake").resolve()


# ------------------------------------------------------------------------------------ CLI
@pytest.fixture
def cli_catalog(servers_root, sandbox_paths, monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "SERVERS", servers_root)
    # wide consoles so table cells are not folded mid-word
    monkeypatch.setattr(cli, "console", Console(width=300))
    monkeypatch.setattr(cli, "err_console", Console(width=300, stderr=True))
    write_manifest(servers_root, "alpha", language="Lang-A", model="event-loop",
                   build=f"echo building >> '{tmp_path / 'alpha-builds'}'")
    write_manifest(servers_root, "beta", language="Lang-B", build="echo 'fatal: beta broke'; exit 2")
    write_manifest(servers_root, "gamma", requires=["serverbench-no-such-gamma"],
                   install={"npm": ["gamma@1.0.0"]})
    write_manifest(servers_root, "broken", model="quantum")
    return servers_root


def run_cli(*args: str):
    r = CliRunner().invoke(app, list(args))
    return r, re.sub(r"\s+", " ", r.output)


def test_cli_list_and_catalog_warnings(cli_catalog) -> None:
    r, out = run_cli("list")
    assert r.exit_code == 0, r.output
    assert "warning: servers/broken/server.toml: field 'model': 'quantum' is not one of" in out
    for sid in ("alpha", "beta", "gamma"):
        assert sid in out
    assert "event-loop" in out and "Lang-A" in out


def test_cli_doctor(cli_catalog) -> None:
    r, out = run_cli("doctor")
    assert r.exit_code == 0, r.output
    assert "gamma" in out and "serverbench-no-such-gamma" in out
    assert "npm install --prefix .tools gamma@1.0.0" in out
    assert "loadgen binary" in out and "taskset" in out


# A row's feature as `list` and `doctor` show it: (the text function, the choices of a row that serves it,
# what is shown for it, the choices of one declared out, the column's header, what a row declaring neither shows).
FEATURE_COLUMNS = [
    (doctor.tls_text, {"tls_library": "rustls 0.23 via tokio-rustls 0.26"}, "rustls 0.23 via tokio-rustls 0.26",
     {"tls_out": "asynchttpserver has no TLS [upstream]"}, " TLS ", "not declared (out of the TLS workloads)"),
    (doctor.db_text, {"db_driver": "pgx v5.12.0", "db_pool": "pgxpool", "db_wait": "async", "db_pipelining": "off",
                      "db_prepared": "on"}, "pgx v5.12.0; pgxpool",
     {"db_out": "no driver reachable here [hex]"}, " database ", "not declared (out of the database workloads)"),
    (doctor.compress_text, {"compression": "zlib 1.2.13", "cpu_work": "inline"}, "zlib 1.2.13; inline",
     {"compress_out": "no zlib binding here"}, " compress ", "not declared (out of the compress workloads)"),
]


@pytest.mark.parametrize("text,served,shown,out,header,neither", FEATURE_COLUMNS,
                         ids=["tls", "database", "compress"])
def test_list_and_doctor_show_each_rows_features(servers_root, sandbox_paths, monkeypatch, text, served, shown, out,
                                                  header, neither) -> None:
    monkeypatch.setattr(paths, "SERVERS", servers_root)
    monkeypatch.setattr(cli, "console", Console(width=500))
    choices = {"pipelined_writes": "per-response", "file_read": "blocking", "nodelay": "on"}
    write_manifest(servers_root, "row", choices={**choices, **served})
    write_manifest(servers_root, "outrow", choices={**choices, **out})
    write_manifest(servers_root, "plainrow")
    cat = load_catalog(servers_root).servers
    why = next(iter(out.values()))
    assert (text(cat["row"]), text(cat["outrow"]), text(cat["plainrow"])) == (shown, f"out: {why}", neither)
    for cmd in ("list", "doctor"):
        r, output = run_cli(cmd)
        assert r.exit_code == 0, r.output
        assert header in output and shown in output and neither in output
        assert f"out: {why}" in output  # shown as written, not read as markup


def test_a_row_declares_a_driver_or_why_not_never_both(servers_root) -> None:
    choices = {"pipelined_writes": "per-response", "file_read": "blocking", "nodelay": "on", "db_out": "none here",
               "db_driver": "pgx", "db_pool": "pgxpool", "db_wait": "async", "db_pipelining": "off",
               "db_prepared": "on"}
    write_manifest(servers_root, "both", choices=choices)
    cat = load_catalog(servers_root)
    assert "both" not in cat.servers
    assert any("db_driver and db_out exclude each other" in e for e in map(str, cat.errors)), cat.errors


def test_cli_build_exit_code_and_summary(cli_catalog, tmp_path) -> None:
    r, out = run_cli("build")
    assert r.exit_code == 1
    assert "1 build(s) failed:" in out and "beta: build of 'beta' failed with exit code 2" in out
    assert "skipped gamma:" in out
    assert (tmp_path / "alpha-builds").read_text().count("building") == 1
    r, out = run_cli("build", "alpha")
    assert r.exit_code == 0 and "1 cached" in out
    r, out = run_cli("build", "nosuch")
    assert r.exit_code == 2 and "unknown server 'nosuch'; known: alpha, beta, gamma" in out


def test_cli_install_dry_run_and_help(cli_catalog) -> None:
    r, out = run_cli("install", "--dry-run", "gamma")
    assert r.exit_code == 0 and "would run: npm install" in out and "gamma@1.0.0" in out
    for cmd in ("doctor", "list", "build", "install"):
        r, out = run_cli(cmd, "--help")
        assert r.exit_code == 0 and "Usage" in out


def test_install_as_non_root_only_prints(servers_root, sandbox_paths, monkeypatch) -> None:
    monkeypatch.setattr(doctor, "is_root", lambda: False)
    write_manifest(servers_root, "need", requires=["serverbench-no-such-x"],
                   install={"apt": ["unzip"]})
    msgs = install_missing(list(load_catalog(servers_root).servers.values()), dry_run=False)
    assert "not root, skipped; run: sudo apt-get install -y --no-install-recommends unzip" in msgs


def test_install_as_root_runs_apt_and_npm_and_links(servers_root, sandbox_paths, tmp_path,
                                                    monkeypatch) -> None:
    """Fake apt-get/npm on PATH record their calls; npm 'installs' the missing tool."""
    fake = tmp_path / "fakebin"
    fake.mkdir()
    calls = tmp_path / "calls"
    (fake / "apt-get").write_text(f'#!/bin/sh\necho "apt-get $*" >> "{calls}"\n')
    (fake / "npm").write_text(f"""#!/bin/sh
echo "npm $*" >> "{calls}"
prefix="$3"
mkdir -p "$prefix/node_modules/sbfake/bin" "$prefix/node_modules/.bin"
printf '#!/bin/sh\\necho sbfake 2.0\\n' > "$prefix/node_modules/sbfake/bin/sbfake"
chmod +x "$prefix/node_modules/sbfake/bin/sbfake"
ln -sf ../sbfake/bin/sbfake "$prefix/node_modules/.bin/sbfake"
""")
    for f in fake.iterdir():
        f.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(doctor, "is_root", lambda: True)
    write_manifest(servers_root, "needs-sbfake", requires=["sbfake"], version="sbfake --version",
                   install={"apt": ["unzip"], "npm": ["sbfake@2.0.0"]})
    msgs = install_missing(list(load_catalog(servers_root).servers.values()), dry_run=False)
    assert calls.read_text().splitlines() == [
        "apt-get update",
        "apt-get install -y --no-install-recommends unzip",
        f"npm install --prefix {paths.TOOLS} --no-audit --no-fund sbfake@2.0.0",
    ]
    assert "installed Debian packages: unzip" in msgs
    assert any("linked sbfake into" in m for m in msgs)
    assert msgs[-1] == "needs-sbfake: now available (sbfake 2.0)"
    assert (paths.LOGS / "install.log").is_file()


def test_a_missing_debian_package_makes_a_row_unavailable(servers_root, sandbox_paths) -> None:
    # headers and modules (libasio-dev, libnginx-mod-http-lua) have no executable `requires` could name
    write_manifest(servers_root, "hdr", requires=["sh"], install={"apt": ["serverbench-no-such-package-dev"]})
    a = doctor.check(load(servers_root, "hdr"))
    assert not a.available and a.missing == ["apt:serverbench-no-such-package-dev"]
    assert "apt-get install -y serverbench-no-such-package-dev" in a.install_hint


def test_the_run_step_needs_only_run_requires_and_reports_the_built_version(servers_root, sandbox_paths) -> None:
    """A row built elsewhere runs where its compiler and apt packages are absent (serverbench bundle)."""
    write_manifest(servers_root, "native", requires=["serverbench-no-such-cc"], run_requires=[],
                   install={"apt": ["serverbench-no-such-pkg"]}, version="serverbench-no-such-cc --version",
                   build="true")
    write_manifest(servers_root, "jvm", requires=[], run_requires=["serverbench-no-such-java"])
    native, jvm = load(servers_root, "native"), load(servers_root, "jvm")
    b = doctor.check(native, "build")
    assert not b.available and b.missing == ["serverbench-no-such-cc", "apt:serverbench-no-such-pkg"]
    assert b.missing == doctor.check(native).missing  # build is the default step
    r = doctor.check(native, "run")
    assert r.available and r.version is None and "failed" in (r.reason or "")  # no stamp: the command's verdict
    paths.STAMPS.mkdir(parents=True)
    (paths.STAMPS / "native").write_text("abc\ncc 1.2.3 (built elsewhere)\n")
    assert doctor.check(native, "run").version == "cc 1.2.3 (built elsewhere)"
    j = doctor.check(jvm, "run")
    assert not j.available and j.missing == ["serverbench-no-such-java"] and "at run time" in (j.reason or "")
    assert doctor.check(jvm, "build").available
