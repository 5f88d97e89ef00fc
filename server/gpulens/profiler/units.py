"""Short human figures shared by the report, the hints and the editor clients' labels."""

from __future__ import annotations


def _two_figures(value: float, units: tuple[tuple[float, str], ...]) -> str:
    """`value` in the smallest of `units` (ascending) that keeps it under 1000, to two
    significant figures: "8.7 ms", "62 ms", and "1.0 s" rather than "1000 ms"."""
    for scale, unit in units:
        scaled = value / scale
        if scaled < 999.5 or unit == units[-1][1]:
            return f"{scaled:.1f}{unit}" if scaled < 9.95 else f"{scaled:.0f}{unit}"
    raise AssertionError("unreachable: the last unit always returns")


def short_seconds(seconds: float) -> str:
    """0.0087 -> "8.7 ms", 0.062 -> "62 ms", 1.4 -> "1.4 s"; 0 -> "0 ms"."""
    if seconds <= 0:
        return "0 ms"
    return _two_figures(seconds, ((1e-9, " ns"), (1e-6, " µs"), (1e-3, " ms"), (1.0, " s")))


def short_bytes(size: float) -> str:
    """400_000_000 -> "400 MB", 4096 -> "4.1 KB", 200 -> "200 B" (decimal units)."""
    if size < 1000:
        return f"{size:.0f} B"
    return _two_figures(size, ((1e3, " KB"), (1e6, " MB"), (1e9, " GB"), (1e12, " TB")))


def memory_bytes(size: float) -> str:
    """GPU memory in binary units, as the status bar and torch count it: 2**30 -> "1.0 GiB",
    4_000_000 -> "3.8 MiB", 200 -> "200 B"."""
    if size < 1000:
        return f"{size:.0f} B"
    return _two_figures(size, ((2**10, " KiB"), (2**20, " MiB"), (2**30, " GiB"), (2**40, " TiB")))


def short_count(count: int) -> str:
    """1400 -> "1.4k", 200 -> "200", 12_345 -> "12k", 2_000_000 -> "2M"."""
    if count < 1000:
        return str(count)
    return _two_figures(count, ((1e3, "k"), (1e6, "M"), (1e9, "G"))).replace(".0", "")
