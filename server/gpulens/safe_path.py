"""How gpulens starts a Python subprocess that imports nothing from a folder others can write.

``python -c CODE`` puts its working directory first on ``sys.path`` (as ``""``), and
``python -m MODULE`` puts the working directory there too. Run in a shared temp dir, a planted
``/tmp/json.py`` would run as every gpulens user; run in a workspace folder, the repository's
``json.py`` would run on open. So a script gpulens hands to ``python -c`` starts with
``SAFE_PATH_PREAMBLE`` (works on every Python the probes support, unlike ``-P``, which needs
3.11), and runs in ``private_directory()``: fresh, empty, readable by its owner only, removed
afterwards.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

# Before anything else is imported: `sys` is built in, so this line itself imports nothing.
SAFE_PATH_PREAMBLE = 'import sys\nif sys.path[:1] == [""]:\n    del sys.path[0]\n'


def safe_source(source: str) -> str:
    """``source`` for ``python -c``, dropping the working directory from ``sys.path`` first.

    ``source`` must not begin with a ``from __future__`` import (it would no longer be first).
    """
    return SAFE_PATH_PREAMBLE + source


@contextmanager
def private_directory(prefix: str = "gpulens-") -> Iterator[str]:
    """A fresh empty directory (mode 0700, under the temp dir), removed on exit.

    A working directory nobody else can write and nobody could have prepared in advance: even
    a child that puts its cwd on ``sys.path`` finds nothing there.
    """
    with tempfile.TemporaryDirectory(prefix=prefix, ignore_cleanup_errors=True) as path:
        yield path
