"""Selection refactors: text edits a user asks for, offered with no diagnostic needed.

Each function takes the document text and a selection (0-based, code-point columns) and
returns the edits, or an empty list when the refactor does not apply there. Every result
keeps the file valid Python, and applying a refactor twice changes nothing the second time.
"""

from __future__ import annotations

from gpulens.analysis.model import Fix, Span

# the refactors in menu order, and how a menu names each before it knows the device
REFACTOR_MENU_TITLES = {
    "move_to_device": "Move to device…",
    "insert_sync_timer": "Insert synchronize-aware timer",
    "port_numpy_to_cupy": "Port NumPy to CuPy",
}


def refactor(kind: str, text: str, selection: Span, device: str = "cuda") -> Fix | None:
    """The refactor ``kind`` (a key of `REFACTOR_MENU_TITLES`) at ``selection``, titled as the
    editors' menus title it; None when it does not apply there."""
    from gpulens.analysis.refactors.move_to_device import move_to_device
    from gpulens.analysis.refactors.numpy_to_cupy import port_numpy_to_cupy
    from gpulens.analysis.refactors.sync_timer import insert_sync_timer

    if kind == "move_to_device":
        title, edits = f"Move to device ({device})", move_to_device(text, selection, device)
    elif kind == "insert_sync_timer":
        title, edits = "Insert synchronize-aware timer", insert_sync_timer(text, selection)
    elif kind == "port_numpy_to_cupy":
        title, edits = "Port NumPy to CuPy", port_numpy_to_cupy(text, selection)
    else:
        raise ValueError(f"no refactor named {kind!r}")
    return Fix(title, tuple(edits)) if edits else None


def refactors_for(text: str, selection: Span, device: str = "cuda") -> list[Fix]:
    """The refactors that apply to ``selection``, as titled fixes, in menu order."""
    offered = (refactor(kind, text, selection, device) for kind in REFACTOR_MENU_TITLES)
    return [fix for fix in offered if fix is not None]
