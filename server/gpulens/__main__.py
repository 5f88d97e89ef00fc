"""`python -m gpulens`: the same as the `gpulens` command."""

import os
import sys

# `python -m` puts the working directory first on sys.path, so a `json.py` or `pygls/` in the
# folder an editor starts us in would be imported instead of the real one. gpulens never imports
# the user's modules: drop that entry before importing anything. (What runpy imported before
# this line is out of our reach: launchers should pass -P, as the editor clients do.)
try:
    if sys.path and not sys.flags.safe_path and sys.path[0] == os.getcwd():
        del sys.path[0]
except OSError:  # the working directory was removed: nothing can be imported from it
    pass

from gpulens.cli import main

raise SystemExit(main())
