"""README.md's contestant table is the one scripts/contestants_table.py prints from the manifests."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_readme_lists_every_contestant_as_its_manifest_says() -> None:
    table = subprocess.run([sys.executable, str(ROOT / "scripts" / "contestants_table.py")], check=True,
                           capture_output=True, text=True, cwd=ROOT).stdout.strip()
    assert table.count("\n") > 10
    readme = (ROOT / "README.md").read_text()
    assert table in readme, "README's contestant table is stale: paste `python scripts/contestants_table.py`"
