"""A PostgreSQL cluster of the harness's own, in a fresh folder, removed when it stops.

Postgres refuses to run as root, so as root initdb and the server run as the unprivileged `postgres`
user Debian's package creates (`setpriv`); as another user they run as that user. The postmaster is
started directly, not through pg_ctl (which daemonizes it), so the harness holds its PID: it is
the harness's child, in a session of its own (a terminal's Ctrl-C reaches only the harness, which
stops it), and the kernel SIGKILLs it if the harness dies (`setpriv --pdeathsig`, set after the
user change, which would clear it); its own children exit when they see the postmaster gone. A
folder left by a harness killed that way is removed by the next start (`sweep_stale`). initdb is tied
to the harness the same way.

PR_SET_PDEATHSIG fires when the *thread* that started the child ends: start it from a thread that
lives as long as the cluster is needed (the main thread).
"""
from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import psycopg

from serverbench.catalog import doctor
from serverbench.database import schema
from serverbench.database.schema import DatabaseError
from serverbench.processes import supervisor

PG_USER = "postgres"  # the OS user that owns and runs the cluster when the harness is root
FOLDER_PREFIX = "serverbench-pg-"
START_TIMEOUT_S = 30.0
STOP_GRACE_S = 10.0
PORT_TRIES = 3
LOG_TAIL_LINES = 5
SOCKET_PATH_MAX = 107  # sun_path's 108 bytes with the terminating NUL

# TechEmpower's settings (toolset/databases/postgres/postgresql-min.conf) that shape a measurement.
# fsync stays on, as in TechEmpower's: with synchronous_commit off no commit waits for the disk
# anyway (the WAL writer flushes in the background), and the cluster stays one a reader could run.
_SETTINGS = {
    "shared_buffers": "256MB",
    "work_mem": "64MB",
    "synchronous_commit": "off",
    "fsync": "on",
    "shared_preload_libraries": "'pg_stat_statements'",
    "pg_stat_statements.track": "all",
    "pg_stat_statements.max": "10000",  # TechEmpower's 500000 reserves shared memory a few queries never use
    "track_activity_query_size": "2048",
    "wal_level": "minimal",
    "max_wal_senders": "0",
    "ssl": "off",
}


@dataclass
class ManagedPostgres:
    """A running cluster: its folder (data/, the Unix socket, postgres.log), port and postmaster."""
    folder: Path
    port: int
    process: subprocess.Popen[bytes]
    max_connections: int
    cpus: list[int]
    bindir: Path
    _stopped: bool = field(default=False, repr=False)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def log(self) -> Path:
        return self.folder / "postgres.log"

    @property
    def url(self) -> str:
        """`$DATABASE_URL` for rows: TechEmpower's user and database over loopback TCP."""
        return schema.url("127.0.0.1", self.port)

    def admin(self, dbname: str = schema.DB_NAME) -> dict[str, object]:
        """psycopg keywords for the superuser over the cluster's own Unix socket (trust: the socket's
        folder is reachable by its owner and root only)."""
        return {"host": str(self.folder), "port": self.port, "user": PG_USER, "dbname": dbname,
                "connect_timeout": schema.CONNECT_TIMEOUT_S}

    def restart(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """A fast shutdown (every client's connection reset), then the same cluster started again on its
        port, ready when this returns (the db-outage workload). Call it from the thread that started the
        cluster: the new postmaster dies with the thread that starts it (module docstring)."""
        _terminate(self.process)
        self.process = _spawn(self.bindir, self.folder, self.port, _run_as()[0], self.cpus)
        if not _wait_ready(self, timeout_s):
            raise DatabaseError(f"PostgreSQL did not start again after its restart: {log_tail(self.log)}")

    def freeze(self, seconds: float) -> subprocess.Popen[str]:
        """Every process of the cluster stopped for `seconds`, then continued, by a process of its own
        (freeze.py) that continues them at once if the harness dies; it prints `frozen`, then `thawed`.
        Call it from a thread that outlives the freeze (the main thread): its SIGTERM comes with that
        thread's end."""
        me = os.getpid()
        return subprocess.Popen([sys.executable, "-m", "serverbench.database.freeze", f"{seconds:g}", str(self.pid)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True, start_new_session=True,
                                preexec_fn=lambda: supervisor.die_with_parent(me, signal.SIGTERM))

    def stop(self) -> None:
        """Stop the postmaster by PID (and any child left), then remove the folder; idempotent."""
        if self._stopped:
            return
        try:
            _terminate(self.process)
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
            self._stopped = True


def _run_as() -> tuple[list[str], int, int]:
    """setpriv's user options, uid and gid: `postgres` when root, else this user."""
    if os.geteuid() != 0:
        return [], os.getuid(), os.getgid()
    try:
        pw = pwd.getpwnam(PG_USER)
    except KeyError:
        raise DatabaseError(f"PostgreSQL refuses to run as root and there is no `{PG_USER}` user to run "
                            f"it as; fix: {doctor.POSTGRES_HINT} (it creates the user)") from None
    return [f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--init-groups"], pw.pw_uid, pw.pw_gid


def log_tail(path: Path) -> str:
    """The last lines of a log on one line."""
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no log"
    return " | ".join(lines[-LOG_TAIL_LINES:]) or "empty log"


def _initdb(bindir: Path, folder: Path, user: list[str]) -> None:
    log = folder / "initdb.log"
    cmd = ["setpriv", *user, "--pdeathsig=KILL", "--", str(bindir / "initdb"), "-D", str(folder / "data"),
           "-U", PG_USER, "-E", "UTF8", "--locale=C", "--auth-local=trust", "--auth-host=scram-sha-256",
           "--no-sync"]  # a throwaway cluster: no fsync of the fresh files (seconds on a slow disk)
    with open(log, "wb") as out:
        rc = subprocess.run(cmd, cwd=folder, env=_env(), stdin=subprocess.DEVNULL, stdout=out,
                            stderr=subprocess.STDOUT, timeout=120).returncode
    if rc != 0:
        raise DatabaseError(f"initdb failed with exit code {rc} in {folder}: {log_tail(log)}; fix: the "
                            f"folder must be reachable by user {PG_USER} (pass another parent folder)")


def _env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}


def _configure(folder: Path, max_connections: int) -> None:
    """Append the harness's settings to postgresql.conf: loopback only, its own socket folder."""
    quoted = str(folder).replace("'", "''")
    lines = {"listen_addresses": "'127.0.0.1'", "unix_socket_directories": f"'{quoted}'",
             "max_connections": str(max_connections), **_SETTINGS}
    with open(folder / "data" / "postgresql.conf", "a") as f:
        f.write("\n# serverbench (database/cluster.py): TechEmpower's settings, loopback only\n")
        f.writelines(f"{k} = {v}\n" for k, v in lines.items())


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spawn(bindir: Path, folder: Path, port: int, user: list[str], cpus: list[int]) -> subprocess.Popen[bytes]:
    cmd = ["setpriv", *user, "--pdeathsig=KILL", "--", str(bindir / "postgres"), "-D", str(folder / "data"),
           "-p", str(port)]
    with open(folder / "postgres.log", "ab") as log:
        return subprocess.Popen(supervisor.pinned(cmd, cpus), cwd=folder, env=_env(), stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _wait_ready(pg: ManagedPostgres, timeout_s: float) -> bool:
    """True once it accepts connections; False if it exited (the caller reads the log)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pg.process.poll() is not None:
            return False
        try:
            with psycopg.connect(**{**pg.admin("postgres"), "connect_timeout": 2}):
                return True
        except psycopg.OperationalError:
            time.sleep(0.05)
    raise DatabaseError(f"PostgreSQL (pid {pg.pid}) did not accept connections within {timeout_s:.0f} s: "
                        f"{log_tail(pg.log)}")


def start(max_connections: int, *, cpus: list[int] | None = None, seed: int = schema.DEFAULT_SEED,
          parent: Path | None = None, timeout_s: float = START_TIMEOUT_S) -> ManagedPostgres:
    """initdb a fresh cluster under `parent` (the system's temporary folder by default: every folder
    above it must be reachable by the postgres user), start it on a free loopback port pinned to
    `cpus` (default: this process's), load TechEmpower's schema and data; stop() ends it all."""
    bindir = doctor.postgres_bindir()
    if bindir is None:
        raise DatabaseError(f"PostgreSQL's server binaries (initdb, postgres) were not found; fix: "
                            f"{doctor.POSTGRES_HINT}")
    if shutil.which("setpriv") is None:
        raise DatabaseError("setpriv not found (it runs Postgres as its user and ties it to the harness); "
                            "fix: apt-get install -y util-linux")
    if max_connections < 1:
        raise DatabaseError(f"max_connections must be at least 1, not {max_connections}")
    user, uid, gid = _run_as()
    sweep_stale(parent)
    folder = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-", dir=parent))
    if len(str(folder)) + len("/.s.PGSQL.65535") > SOCKET_PATH_MAX:
        shutil.rmtree(folder)
        raise DatabaseError(f"{folder} is too long a path for Postgres' Unix socket; fix: a shorter parent folder")
    os.chown(folder, uid, gid)
    cpus = list(cpus or supervisor.online_cpus())
    pg: ManagedPostgres | None = None
    try:
        _initdb(bindir, folder, user)
        _configure(folder, max_connections)
        for _ in range(PORT_TRIES):  # the free port may be taken between the probe and the bind
            port = _free_port()
            pg = ManagedPostgres(folder, port, _spawn(bindir, folder, port, user, cpus), max_connections, cpus,
                                 bindir)
            if _wait_ready(pg, timeout_s):
                break
            if "could not bind" not in pg.log.read_text(errors="replace"):
                break
        if pg is None or pg.process.poll() is not None:
            raise DatabaseError(f"PostgreSQL exited at start: {log_tail(folder / 'postgres.log')}")
        schema.load(pg.admin(), seed)
    except BaseException:
        if pg is not None:
            pg.stop()
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return pg


@contextmanager
def managed(max_connections: int, **kwargs: object) -> Iterator[ManagedPostgres]:
    """`start(...)` for a `with` block: stopped and removed on leaving it, errors and Ctrl-C included."""
    pg = start(max_connections, **kwargs)  # type: ignore[arg-type]
    try:
        yield pg
    finally:
        pg.stop()


def _terminate(proc: subprocess.Popen[bytes]) -> None:
    """SIGINT, then SIGKILL after STOP_GRACE_S; then any child still there. SIGINT is Postgres' *fast*
    shutdown (clients disconnected, a clean checkpoint); its SIGTERM is the *smart* one, which waits
    for every client to leave, and a row's pool may still hold connections."""
    try:
        children = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        children = []
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for child in children:  # psutil checks the start time, so a reused PID is not touched
        try:
            child.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(children, timeout=STOP_GRACE_S)


def sweep_stale(parent: Path | None = None) -> list[Path]:
    """Remove cluster folders whose harness is gone (killed with SIGKILL: the kernel stopped its
    postmaster, nobody removed the folder) and whose postmaster is not running; the folders removed."""
    removed = []
    for folder in Path(parent or tempfile.gettempdir()).glob(f"{FOLDER_PREFIX}*-*"):
        owner = folder.name[len(FOLDER_PREFIX):].split("-", 1)[0]
        if not owner.isdigit() or psutil.pid_exists(int(owner)) or _postmaster_alive(folder):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def _postmaster_alive(folder: Path) -> bool:
    try:
        pid = int((folder / "data" / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
