"""What `gpulens serve` imports before it can answer `initialize`: the LSP wiring and the
few light modules it reads, not the analysis's walk and rules (loaded on a thread once
`initialize` is answered), the profiler (with the first profile), the profile's merge into
the diagnostics, "Measure this fix" or the device status (half a second after `initialized`).
A fresh interpreter runs the server's start path (`commands.serve`, `build_server`) for real
and lists what it loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys

# gpulens modules the start may load besides `gpulens.lsp.*`, `gpulens.commands.*` and
# `gpulens.cli`: each is a few small definitions the wiring reads
LIGHT = {
    "gpulens",
    "gpulens.analysis",
    "gpulens.analysis.config",
    "gpulens.analysis.encoding",
    "gpulens.analysis.engine",
    "gpulens.analysis.model",
    "gpulens.analysis.source",
    "gpulens.device",
    "gpulens.device.intervals",
    "gpulens.profiler",
    "gpulens.profiler.cells",
    "gpulens.profiler.timeouts",
}
EDGES = ("gpulens.lsp", "gpulens.commands", "gpulens.cli")

START = """
import json, sys
from gpulens.commands import serve
from gpulens.lsp.server import build_server
build_server()
print(json.dumps(sorted(m for m in sys.modules if m == "gpulens" or m.startswith("gpulens."))))
"""


def test_the_server_starts_without_the_analysis_the_profiler_or_the_status() -> None:
    done = subprocess.run(
        [sys.executable, "-c", START], capture_output=True, text=True, timeout=120, check=True
    )
    loaded = json.loads(done.stdout)
    assert "gpulens.lsp.server" in loaded  # the start ran
    heavy = [m for m in loaded if m not in LIGHT and not m.startswith(EDGES)]
    assert heavy == []
