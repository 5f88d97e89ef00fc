"""Selection refactors: text edits a user asks for, offered with no diagnostic needed.

Each function takes the document text and a selection (0-based, code-point columns) and
returns the edits, or an empty list when the refactor does not apply there. Every result
keeps the file valid Python, and applying a refactor twice changes nothing the second time.
"""

from __future__ import annotations

from gpulens.analysis.model import Fix, Span


def refactors_for(text: str, selection: Span, device: str = "cuda") -> list[Fix]:
    """The refactors that apply to ``selection``, as titled fixes, in menu order."""
    from gpulens.analysis.refactors.move_to_device import move_to_device
    from gpulens.analysis.refactors.numpy_to_cupy import port_numpy_to_cupy
    from gpulens.analysis.refactors.sync_timer import insert_sync_timer

    offered: list[Fix] = []
    for title, edits in (
        (f"Move to device ({device})", move_to_device(text, selection, device)),
        ("Insert synchronize-aware timer", insert_sync_timer(text, selection, warmup=True)),
        ("Port NumPy to CuPy", port_numpy_to_cupy(text, selection)),
    ):
        if edits:
            offered.append(Fix(title, tuple(edits)))
    return offered
