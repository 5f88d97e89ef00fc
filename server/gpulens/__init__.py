"""gpulens: see and fix what Python code does to the GPU, inside the editor."""


def __getattr__(name: str) -> str:
    # `__version__` is read from the installed metadata on first use: importlib.metadata
    # costs 20-60 ms, which `gpulens check` and `--help` need not pay
    if name != "__version__":
        raise AttributeError(f"module 'gpulens' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("gpulens")
    except PackageNotFoundError:  # run from a source tree that was never installed
        found = "unknown"
    globals()["__version__"] = found
    return found


def load_ipython_extension(ipython: object) -> None:
    """`%load_ext gpulens`: registers `%%gpulens` and `%gpulens status`."""
    from gpulens.magic import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: object) -> None:
    from gpulens.magic import unload_ipython_extension as unload

    unload(ipython)
