"""What a db row is told about the database (SPEC.md, "Database endpoints"): the URL, its parts for
drivers that take parts, and `$DB_POOL`, the most connections one of its processes opens."""
from __future__ import annotations

from urllib.parse import unquote, urlsplit

from serverbench.catalog.manifests import Manifest

# Connections per server. TechEmpower's rows size their pools themselves (often 2-4x the CPUs of
# a 28-core database machine); here the database shares a 2-CPU machine, and HikariCP's sizing
# advice (about 2x the database's cores plus its disks) lands well under this. One figure for
# every row keeps the pool out of the comparison; a row whose model would use more waits for a
# connection, which is what its users' pool does.
DB_POOL_TOTAL = 16


def db_pool(m: Manifest, workers: int) -> int:
    """`$DB_POOL`: the server's connections, divided among the processes of a multi-process row."""
    if m.counter == "per-process":
        return max(1, DB_POOL_TOTAL // max(1, workers))
    return DB_POOL_TOTAL


def row_env(db_url: str, m: Manifest, workers: int) -> dict[str, str]:
    """The variables a db row starts with; nothing for a row that serves no database."""
    if m.choices is None or not m.choices.db:
        return {}
    u = urlsplit(db_url)
    return {
        "DATABASE_URL": db_url,
        "DB_HOST": u.hostname or "127.0.0.1",
        "DB_PORT": str(u.port or 5432),
        "DB_NAME": u.path.lstrip("/"),
        "DB_USER": unquote(u.username or ""),
        "DB_PASSWORD": unquote(u.password or ""),
        "DB_POOL": str(db_pool(m, workers)),
    }
