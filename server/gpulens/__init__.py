"""gpulens: see and fix what Python code does to the GPU, inside the editor."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("gpulens")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0"


def load_ipython_extension(ipython: object) -> None:
    """`%load_ext gpulens`: registers `%%gpulens` and `%gpulens status`."""
    from gpulens.magic import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: object) -> None:
    from gpulens.magic import unload_ipython_extension as unload

    unload(ipython)
