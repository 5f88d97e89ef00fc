"""gpulens: see and fix what Python code does to the GPU, inside the editor."""


def __getattr__(name: str) -> str:
    # `__version__` is read from the installed metadata on first use, and the language server
    # reads it before answering `initialize`: importing importlib.metadata costs 60-110 ms,
    # so the METADATA file of the install is read directly where it can be found
    if name != "__version__":
        raise AttributeError(f"module 'gpulens' has no attribute {name!r}")
    found = _metadata_version()
    if found is None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("gpulens")
        except PackageNotFoundError:  # run from a source tree that was never installed
            found = "unknown"
    globals()["__version__"] = found
    return found


def _metadata_version() -> str | None:
    """The `Version:` of the first gpulens `*.dist-info` on sys.path, as importlib.metadata
    finds it (None where there is none, e.g. in a zip: importlib.metadata then decides)."""
    import os
    import sys

    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in sorted(names):
            if not (name.startswith("gpulens-") and name.endswith(".dist-info")):
                continue
            try:
                with open(os.path.join(entry, name, "METADATA"), encoding="utf-8") as metadata:
                    for line in metadata:
                        if line.startswith("Version:"):
                            return line.split(":", 1)[1].strip()
                        if not line.strip():
                            break  # the headers end at the first empty line
            except OSError:
                continue
    return None


def load_ipython_extension(ipython: object) -> None:
    """`%load_ext gpulens`: registers `%%gpulens` and `%gpulens status`."""
    from gpulens.magic import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: object) -> None:
    from gpulens.magic import unload_ipython_extension as unload

    unload(ipython)
