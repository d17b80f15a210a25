"""servers/_left_out.toml: the seeds' rows this machine cannot build, listed by doctor with the reason."""
from pathlib import Path

from typer.testing import CliRunner

from serverbench.catalog import left_out
from serverbench.cli import app


def test_the_repository_file_parses_and_names_cowboy_and_dotnet() -> None:
    rows, problem = left_out.load()
    assert problem is None
    ids = {r.id for r in rows}
    assert {"erlang-cowboy", "dotnet"} <= ids and all(r.reason for r in rows)
    served = {p.name for p in left_out.paths.SERVERS.iterdir() if p.is_dir()}
    assert ids.isdisjoint(served)  # never both a contestant and "left out"


def test_a_broken_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / left_out.FILE_NAME).write_text('[[row]]\nid = "x"\n')
    rows, problem = left_out.load(tmp_path)
    assert rows == [] and problem.startswith(str(tmp_path / left_out.FILE_NAME)) and "\n" not in problem


def test_doctor_lists_them() -> None:
    out = CliRunner().invoke(app, ["doctor"], env={"COLUMNS": "250"})
    assert out.exit_code == 0, out.output
    assert "not measured here" in out.output and "hex" in out.output
