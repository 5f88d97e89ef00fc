"""gpulens: see and fix what Python code does to the GPU, inside the editor."""

# read by hatch at build time; a literal, because importlib.metadata costs ~40 ms at start-up
__version__ = "0.1.0"


def load_ipython_extension(ipython: object) -> None:
    """`%load_ext gpulens`: registers `%%gpulens` and `%gpulens status`."""
    from gpulens.magic import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: object) -> None:
    from gpulens.magic import unload_ipython_extension as unload

    unload(ipython)
