"""Manifest loading: a broken server.toml is one clear line; the rest still load."""
from __future__ import annotations

from pathlib import Path

import pytest

from serverbench import paths
from serverbench.catalog.manifests import CatalogError, load_catalog, select

from conftest import write_manifest


def test_valid_manifest_loads_with_defaults(servers_root: Path) -> None:
    write_manifest(servers_root, "py-ok", max_connections="workers", workers=8,
                   env={"FOO": "bar"}, install={"apt": ["python3"], "npm": ["deno@2.5.6"]})
    cat = load_catalog(servers_root)
    assert cat.errors == []
    m = cat.servers["py-ok"]
    assert m.id == "py-ok" and m.dir == servers_root / "py-ok"
    assert m.framework == "std" and m.counter == "shared" and m.build == ""
    assert m.env == {"FOO": "bar"}
    assert m.install.npm == ["deno@2.5.6"]
    assert m.bound(64) == 64


def test_choices_table_is_optional_and_validated(servers_root: Path) -> None:
    write_manifest(servers_root, "with", choices={"pipelined_writes": "per-response", "file_read": "blocking",
                                                  "nodelay": "off"})
    write_manifest(servers_root, "without")
    cat = load_catalog(servers_root)
    assert cat.errors == []
    ch = cat.servers["with"].choices
    assert ch is not None and (ch.pipelined_writes, ch.file_read, ch.nodelay) == ("per-response", "blocking", "off")
    assert cat.servers["without"].choices is None


def test_bound_int_and_unbounded(servers_root: Path) -> None:
    write_manifest(servers_root, "a", max_connections=100)
    write_manifest(servers_root, "b")
    cat = load_catalog(servers_root)
    assert cat.servers["a"].bound(4) == 100
    assert cat.servers["b"].bound(4) is None


@pytest.mark.parametrize("fields, field, fix", [
    ({"run": None}, "field 'run': missing", "fix: add run"),
    ({"model": "coroutines"}, "field 'model': 'coroutines' is not one of thread-per-connection",
     "fix: set model to one of them"),
    ({"name": "other"}, "field 'name': 'other' differs from the folder name 'broken'",
     'fix: set name = "broken"'),
    ({"colour": "blue"}, "field 'colour': unknown field", "fix: remove it"),
    ({"workers": "many"}, "field 'workers'", "fix: use an integer"),
    ({"max_connections": "lots"}, "field 'max_connections': 'lots' is not a positive integer",
     "fix:"),
    ({"max_connections": 0}, "field 'max_connections'", "fix:"),
    ({"counter": "global"}, "field 'counter': 'global'", "fix: use one of them"),
    ({"requires": "cargo"}, "field 'requires'", "fix: use a list"),
    ({"run": ""}, "field 'run'", "fix: give it a non-empty value"),
    ({"choices": {"pipelined_writes": "batched", "file_read": "async", "nodelay": "on"}},
     "field 'choices.pipelined_writes': 'batched' is not 'coalesced' or 'per-response'", "fix: use one of them"),
    ({"choices": {"pipelined_writes": "coalesced", "nodelay": "on"}}, "field 'choices.file_read': missing",
     "fix: add file_read = ... under [choices]"),
    ({"choices": {"pipelined_writes": "coalesced", "file_read": "async"}}, "field 'choices.nodelay': missing",
     "fix: add nodelay = ... under [choices]"),
    ({"choices": {"pipelined_writes": "coalesced", "file_read": "async", "nodelay": "yes"}},
     "field 'choices.nodelay': 'yes' is not 'on' or 'off'", "fix: use one of them"),
    ({"choices": {"pipelined_writes": "coalesced", "file_read": "async", "nodelay": "on", "gzip": "no"}},
     "field 'choices.gzip': unknown field", "fix: remove it"),
    ({"choices": "coalesced"}, "field 'choices'", "fix: use a table"),
])
def test_broken_manifest_is_one_line_naming_file_field_fix(
        servers_root: Path, fields: dict, field: str, fix: str) -> None:
    write_manifest(servers_root, "good")
    write_manifest(servers_root, "broken", **fields)
    write_manifest(servers_root, "zz-good")
    cat = load_catalog(servers_root)
    assert sorted(cat.servers) == ["good", "zz-good"], "the other manifests still load"
    assert len(cat.errors) == 1
    line = cat.errors[0]
    assert "\n" not in line
    assert line.startswith("servers/broken/server.toml: ")
    assert field in line and fix in line, line


def test_bad_toml_syntax(servers_root: Path) -> None:
    write_manifest(servers_root, "good")
    d = servers_root / "syntax"
    d.mkdir()
    (d / "server.toml").write_text('name = "syntax"\nmodel = = "x"\n')
    cat = load_catalog(servers_root)
    assert list(cat.servers) == ["good"]
    assert len(cat.errors) == 1
    assert cat.errors[0].startswith("servers/syntax/server.toml: invalid TOML: ")
    assert "line 2" in cat.errors[0] and "fix:" in cat.errors[0]


def test_several_problems_still_one_line(servers_root: Path) -> None:
    write_manifest(servers_root, "multi", model="nope", run=None, version=None)
    cat = load_catalog(servers_root)
    assert len(cat.errors) == 1
    assert "also invalid:" in cat.errors[0] and "'version'" in cat.errors[0]


def test_folder_without_manifest_and_reserved_fields(servers_root: Path) -> None:
    (servers_root / "empty").mkdir()
    (servers_root / ".hidden").mkdir()
    write_manifest(servers_root, "withid", id="x")
    cat = load_catalog(servers_root)
    assert cat.servers == {}
    assert cat.errors == [
        "servers/empty: no server.toml; fix: add one (see SPEC.md) or remove the folder",
        "servers/withid/server.toml: field 'id': set by the harness from the folder; fix: remove it",
    ]


def test_select_order_and_unknown(servers_root: Path) -> None:
    for sid in ("b", "a", "c"):
        write_manifest(servers_root, sid)
    write_manifest(servers_root, "bad", model="nope")
    cat = load_catalog(servers_root)
    assert [m.id for m in select(cat, None)] == ["a", "b", "c"]
    assert [m.id for m in select(cat, ["c", "a", "c"])] == ["c", "a"]
    with pytest.raises(CatalogError, match=r"^unknown server 'zz'; known: a, b, c$"):
        select(cat, ["a", "zz"])
    with pytest.raises(CatalogError, match="server.toml is broken"):
        select(cat, ["bad"])


def test_missing_root(tmp_path: Path) -> None:
    cat = load_catalog(tmp_path / "nope")
    assert cat.servers == {} and len(cat.errors) == 1 and "no such directory" in cat.errors[0]


def test_repo_catalog_loads_cleanly() -> None:
    """Every real contestant's manifest must validate (catches a bad server.toml in review)."""
    cat = load_catalog(paths.SERVERS)
    bad = [e for e in cat.errors if "no server.toml" not in e]  # folders being written now
    assert bad == []


def test_every_row_declares_its_choices_and_nodelay() -> None:
    """SPEC.md, Choices: every real row says whether it disables Nagle (and the other choices)."""
    cat = load_catalog(paths.SERVERS)
    undeclared = sorted(sid for sid, m in cat.servers.items() if m.choices is None)
    assert undeclared == [], f"rows without a [choices] table (nodelay included): {undeclared}"
    broken_nodelay = [e for e in cat.errors if "choices.nodelay" in e]
    assert broken_nodelay == []
