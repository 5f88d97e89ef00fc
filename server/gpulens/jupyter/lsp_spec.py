"""jupyter-lsp spec: JupyterLab-LSP users get gpulens' diagnostics and fixes in notebook cells."""

from __future__ import annotations

import sys
from typing import Any


def gpulens_spec(manager: Any) -> dict[str, dict[str, Any]]:
    """The language server spec jupyter-lsp reads through the `jupyter_lsp_spec_v1` entry point."""
    return {
        "gpulens": {
            "version": 2,
            # -P: jupyter-lsp starts it in the notebook folder, whose modules must not shadow ours
            "argv": [sys.executable, "-P", "-m", "gpulens", "serve"],
            "languages": ["python"],
            "display_name": "gpulens",
            "mime_types": ["text/python", "text/x-ipython"],
            "urls": {
                "home": "https://github.com/gpulens/gpulens",
                "issues": "https://github.com/gpulens/gpulens/issues",
            },
            "install": {"pip": "pip install gpulens"},
            "env": {"PYTHONUNBUFFERED": "1"},
            "requires_documents_on_disk": False,
        }
    }
