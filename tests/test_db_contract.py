"""The db contract's manifest side (SPEC.md, "Database endpoints"): the db_* choices come together,
and a db row is told the database's URL, its parts and its pool size."""
import pytest
from pydantic import ValidationError

from serverbench.catalog.manifests import Choices
from serverbench.database import rowenv
from serverbench import paths
from serverbench.catalog import manifests as catalog

BASE = {"pipelined_writes": "coalesced", "file_read": "async", "nodelay": "on"}
DB = {"db_driver": "pgx v5", "db_pool": "pgxpool", "db_wait": "async", "db_pipelining": "off",
      "db_prepared": "on"}


def test_a_db_row_declares_every_db_choice() -> None:
    assert Choices(**BASE, **DB).db
    assert not Choices(**BASE).db
    with pytest.raises(ValidationError, match="missing: db_pipelining, db_prepared"):
        Choices(**BASE, **{k: v for k, v in DB.items() if k not in ("db_pipelining", "db_prepared")})
    with pytest.raises(ValidationError):
        Choices(**BASE, **{**DB, "db_wait": "sometimes"})


def _row(counter: str, db: bool) -> catalog.Manifest:
    m = catalog.load_catalog(paths.SERVERS).servers["go-nethttp"]
    return m.model_copy(update={"counter": counter, "choices": Choices(**BASE, **(DB if db else {}))})


def test_a_db_row_gets_the_url_its_parts_and_a_pool_divided_among_processes() -> None:
    url = "postgres://benchmarkdbuser:bench%40pass@127.0.0.1:5544/hello_world"
    env = rowenv.row_env(url, _row("shared", True), workers=4)
    assert env == {"DATABASE_URL": url, "DB_HOST": "127.0.0.1", "DB_PORT": "5544", "DB_NAME": "hello_world",
                   "DB_USER": "benchmarkdbuser", "DB_PASSWORD": "bench@pass",
                   "DB_POOL": str(rowenv.DB_POOL_TOTAL)}
    assert rowenv.row_env(url, _row("per-process", True), workers=4)["DB_POOL"] == str(rowenv.DB_POOL_TOTAL // 4)
    assert rowenv.row_env(url, _row("per-process", True), workers=64)["DB_POOL"] == "1"
    assert rowenv.row_env(url, _row("shared", False), workers=1) == {}
