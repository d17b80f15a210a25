"""The contestants: `servers/<id>/server.toml` parsed into validated `Manifest`s.

A broken manifest never stops the others from loading: it becomes one line in
`Catalog.errors` naming the file, the field and the fix.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from serverbench import paths

Model = Literal[
    "thread-per-connection",
    "thread-pool",
    "event-loop",
    "event-loop-per-core",
    "async-work-stealing",
    "green-threads",
    "virtual-threads",
    "actor",
    "process-pool",
]
MODELS: tuple[str, ...] = get_args(Model)
MANIFEST_FILE = "server.toml"


class CatalogError(Exception):
    """A request for servers the catalog cannot satisfy (e.g. an unknown id)."""


class Install(BaseModel):
    """How to obtain a missing toolchain: Debian packages and/or npm packages."""

    model_config = ConfigDict(extra="forbid")
    apt: list[str] = []
    npm: list[str] = []


PipelinedWrites = Literal["coalesced", "per-response"]
FileRead = Literal["blocking", "async"]
NoDelay = Literal["on", "off"]
OnOff = Literal["on", "off"]


class Choices(BaseModel):
    """What a row does where SPEC.md leaves a choice that changes throughput (see SPEC.md,
    "Choices"): declared in the manifest's `[choices]` table so the report can show it."""

    model_config = ConfigDict(extra="forbid")
    # Responses to pipelined requests that arrived together: one write, or one write each.
    pipelined_writes: PipelinedWrites
    # /file: a blocking read on the thread serving the connection, or async/offloaded I/O.
    file_read: FileRead
    # TCP_NODELAY on accepted connections: off lets Nagle hold a response's second write until
    # the client's delayed ACK (~40 ms on Linux). Required: a row that omits it cannot be read.
    nodelay: NoDelay
    # The `db` feature (SPEC.md, "Database endpoints"): declaring a driver makes a row a db row,
    # and then the pool, how a query waits, pipelining and preparing must be declared too.
    db_driver: str | None = Field(default=None, min_length=1)
    db_pool: str | None = Field(default=None, min_length=1)
    db_wait: Literal["async", "blocking"] | None = None
    db_pipelining: OnOff | None = None
    db_prepared: OnOff | None = None
    # Or why the stack serves no database here (no driver reachable from this machine's registries, ...):
    # kept out of the database workloads only, with this reason in `list`, `doctor` and the reports.
    db_out: str | None = Field(default=None, min_length=1)
    # The `compress` feature (SPEC.md, "CPU work"): the zlib binding that gzips /compress and where the
    # CPU work runs (inline on the serving thread or loop, or how the row moves it off), or why none here.
    compression: str | None = Field(default=None, min_length=1)
    cpu_work: str | None = Field(default=None, min_length=1)
    compress_out: str | None = Field(default=None, min_length=1)
    # The `tls` feature (SPEC.md, "TLS"): the library that serves HTTPS, or why the stack serves none here.
    tls_library: str | None = Field(default=None, min_length=1)
    tls_out: str | None = Field(default=None, min_length=1)
    # The `h2` feature (SPEC.md, "HTTP/2"): the stack's HTTP/2 server and the stream limit it advertises,
    # or why the stack serves no HTTP/2 here.
    http2_library: str | None = Field(default=None, min_length=1)
    http2_max_streams: str | None = Field(default=None, min_length=1)
    http2_out: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _db_keys_together(self) -> "Choices":
        keys = ("db_driver", "db_pool", "db_wait", "db_pipelining", "db_prepared")
        given = [k for k in keys if getattr(self, k) is not None]
        if given and len(given) < len(keys):
            missing = ", ".join(k for k in keys if k not in given)
            raise ValueError(f"a db row declares every db_* choice; missing: {missing} (see SPEC.md, Choices)")
        if given and self.db_out is not None:
            raise ValueError("db_driver and db_out exclude each other: a row serves the database or says why not")
        if (self.compression is None) != (self.cpu_work is None):
            raise ValueError("a compress row declares both compression and cpu_work (see SPEC.md, Choices)")
        if self.compression is not None and self.compress_out is not None:
            raise ValueError("compression and compress_out exclude each other: a row serves /compress or says why not")
        if self.tls_library is not None and self.tls_out is not None:
            raise ValueError("tls_library and tls_out exclude each other: a row serves TLS or says why not")
        if (self.http2_library is None) != (self.http2_max_streams is None):
            raise ValueError("an h2 row declares both http2_library and http2_max_streams (see SPEC.md, Choices)")
        if self.http2_library is not None and self.http2_out is not None:
            raise ValueError("http2_library and http2_out exclude each other: a row serves HTTP/2 or says why not")
        return self

    @property
    def db(self) -> bool:
        return self.db_driver is not None

    @property
    def compress(self) -> bool:
        return self.compression is not None

    @property
    def tls(self) -> bool:
        return self.tls_library is not None

    @property
    def h2(self) -> bool:
        return self.http2_library is not None


class Manifest(BaseModel):
    """One `server.toml` (see SPEC.md); `id` and `dir` are filled in by the loader."""

    model_config = ConfigDict(extra="forbid")

    id: str
    dir: Path
    name: str = Field(min_length=1)
    language: str = Field(min_length=1)
    runtime: str = Field(min_length=1)
    model: Model
    framework: str = "std"
    origin: str = Field(min_length=1)
    description: str = ""
    build: str = ""
    run: str = Field(min_length=1)
    version: str = Field(min_length=1)
    # executables the build needs (compilers, package managers); `[install] apt` is build-time too
    requires: list[str] = []
    # executables a built row needs to run (java, node, python3…); none for a native binary
    run_requires: list[str] = []
    counter: Literal["shared", "per-process"] = "shared"
    max_connections: int | Literal["workers"] | None = None
    workers: int | None = None
    env: dict[str, str] = {}
    install: Install = Install()
    # Optional `[choices]` table (SPEC.md, "Choices"); None when a row does not declare it.
    choices: Choices | None = None
    # Why this row's figures look as they do where a reader would suspect a defect (the GIL, an
    # interpreter, a stack's default); quoted by the CPU outlier rule (outliers.py) and the report.
    explanation: str = ""
    # Folders (relative to this one, e.g. "../_shared/x") whose code this server compiles or
    # loads too: sibling rows of one language share code there instead of copying it. Their
    # files count in the build-cache hash.
    shares: list[str] = []

    @field_validator("max_connections", "workers")
    @classmethod
    def _positive(cls, v: int | str | None) -> int | str | None:
        if isinstance(v, int) and v < 1:
            raise ValueError("must be at least 1")
        return v

    def shared_dirs(self) -> list[Path]:
        return [(self.dir / rel).resolve() for rel in self.shares]

    def bound(self, workers: int) -> int | None:
        """The most connections this server holds at once given `$WORKERS`; None = unbounded."""
        if self.max_connections == "workers":
            return workers
        return self.max_connections


@dataclass
class Catalog:
    servers: dict[str, Manifest] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    # ids whose manifest failed to load, so `select` can say why they are missing
    broken: set[str] = field(default_factory=set)


def _display(path: Path, root: Path) -> str:
    """`servers/x/server.toml` style path for messages."""
    for base in (paths.REPO, root.parent):
        try:
            return str(path.relative_to(base))
        except ValueError:
            continue
    return str(path)


_FIXES_BY_TYPE = {
    "missing": "add it (see SPEC.md)",
    "extra_forbidden": "remove it or correct its spelling (see SPEC.md for the fields)",
    "int_type": "use an integer",
    "int_parsing": "use an integer",
    "string_type": "use a quoted string",
    "list_type": "use a list, e.g. [\"a\", \"b\"]",
    "dict_type": "use a table",
    "model_type": "use a table",
    "string_too_short": "give it a non-empty value",
}


def _field(err: dict[str, Any]) -> list[str]:
    """The field path of a pydantic error, without union-member tags like 'int'."""
    return [str(p) for p in err["loc"] if not str(p).startswith(("int", "literal[", "str"))]


def _describe(err: dict[str, Any]) -> str:
    """One pydantic error as "field 'x': problem; fix: ..."."""
    loc = _field(err)
    name = ".".join(loc) or "?"
    kind = err["type"]
    value = err.get("input")
    if loc and loc[0] == "choices" and len(loc) > 1:
        key = loc[1]
        if kind == "missing":
            return f"field '{name}': missing; fix: add {key} = ... under [choices] (see SPEC.md, Choices)"
        if kind == "literal_error":
            allowed = err.get("ctx", {}).get("expected", "see SPEC.md")
            return f"field '{name}': {value!r} is not {allowed}; fix: use one of them (see SPEC.md, Choices)"
    if kind == "missing":
        return f"field '{name}': missing; fix: add {name} = ... (see SPEC.md)"
    if kind == "literal_error" and loc and loc[0] == "model":
        return (f"field 'model': {value!r} is not one of {', '.join(MODELS)}; "
                f"fix: set model to one of them")
    if kind == "literal_error" and loc and loc[0] == "counter":
        return f"field 'counter': {value!r} is not 'shared' or 'per-process'; fix: use one of them"
    if loc and loc[0] == "max_connections":
        return (f"field 'max_connections': {value!r} is not a positive integer or \"workers\"; "
                f"fix: use an integer, \"workers\", or omit it (unbounded)")
    if kind == "extra_forbidden":
        return f"field '{name}': unknown field; fix: {_FIXES_BY_TYPE[kind]}"
    fix = _FIXES_BY_TYPE.get(kind, "see SPEC.md")
    return f"field '{name}': {err['msg'].lower()} (got {value!r}); fix: {fix}"


def load_manifest(toml_path: Path, root: Path | None = None) -> Manifest:
    """Parse one manifest; raises CatalogError with the one-line message on any problem."""
    root = root if root is not None else toml_path.parent.parent
    shown = _display(toml_path, root)
    folder = toml_path.parent
    try:
        data = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise CatalogError(f"{shown}: invalid TOML: {e}; fix: correct the syntax there") from None
    except (OSError, UnicodeDecodeError) as e:
        raise CatalogError(f"{shown}: cannot read: {e}; fix: make it a readable UTF-8 file") from None
    for reserved in ("id", "dir"):
        if reserved in data:
            raise CatalogError(f"{shown}: field '{reserved}': set by the harness from the folder; "
                               f"fix: remove it")
    try:
        m = Manifest.model_validate({**data, "id": folder.name, "dir": folder})
    except ValidationError as e:
        errs = e.errors()
        line = f"{shown}: {_describe(errs[0])}"
        first = ".".join(_field(errs[0]))
        others = dict.fromkeys(".".join(_field(x)) for x in errs[1:])
        others.pop(first, None)
        if others:
            line += f" (also invalid: {', '.join(repr(o) for o in others)})"
        raise CatalogError(line) from None
    if m.name != folder.name:
        raise CatalogError(f"{shown}: field 'name': {m.name!r} differs from the folder name "
                           f"{folder.name!r}; fix: set name = \"{folder.name}\" or rename the folder")
    for rel, d in zip(m.shares, m.shared_dirs()):
        if not d.is_dir():
            raise CatalogError(f"{shown}: field 'shares': {rel!r} is not a folder; "
                               f"fix: point it at a folder such as ../_shared/<name>")
    return m


def load_catalog(root: Path | None = None) -> Catalog:
    """Load every `<root>/<id>/server.toml` (default: paths.SERVERS, read at call time);
    problems go to `.errors`, one line each."""
    root = paths.SERVERS if root is None else root
    cat = Catalog()
    if not root.is_dir():
        cat.errors.append(f"{root}: no such directory; fix: run from a serverbench checkout")
        return cat
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        if folder.name.startswith((".", "_")):
            continue
        toml_path = folder / MANIFEST_FILE
        if not toml_path.is_file():
            cat.errors.append(f"{_display(folder, root)}: no {MANIFEST_FILE}; "
                              f"fix: add one (see SPEC.md) or remove the folder")
            cat.broken.add(folder.name)
            continue
        try:
            cat.servers[folder.name] = load_manifest(toml_path, root)
        except CatalogError as e:
            cat.errors.append(str(e))
            cat.broken.add(folder.name)
    return cat


def select(catalog: Catalog, ids: list[str] | None) -> list[Manifest]:
    """The manifests for `ids` in the given order (all, sorted by id, when None or empty)."""
    if not ids:
        return [catalog.servers[k] for k in sorted(catalog.servers)]
    out: list[Manifest] = []
    for i in dict.fromkeys(ids):  # de-duplicate, keep order
        if i not in catalog.servers:
            known = ", ".join(sorted(catalog.servers)) or "(none)"
            why = " (its server.toml is broken, see the warning above)" if i in catalog.broken else ""
            raise CatalogError(f"unknown server '{i}'{why}; known: {known}")
        out.append(catalog.servers[i])
    return out
