"""JupyterLab-LSP finds gpulens through its entry point, and the command it runs starts."""

from __future__ import annotations

import subprocess
from importlib.metadata import entry_points


def test_entry_point_gives_a_spec_whose_command_starts_the_server() -> None:
    (point,) = [e for e in entry_points(group="jupyter_lsp_spec_v1") if e.name == "gpulens"]
    spec = point.load()(None)["gpulens"]
    assert spec["languages"] == ["python"]
    done = subprocess.run(
        [*spec["argv"], "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "stdio" in done.stdout
