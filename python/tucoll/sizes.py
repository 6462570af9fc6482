"""Sizes in bytes as tucoll's commands read and print them: tucoll-bench's spelling (bytes, or a K,
M or G suffix for powers of 1024), parsed and printed here only."""

UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse(text: str) -> int:
    """'16', '1K', '4M' -> bytes."""
    text = text.strip()
    return int(text[:-1]) * UNITS[text[-1].upper()] if text[-1:].upper() in UNITS else int(text)


def text(n: int, long: bool = False) -> str:
    """1024 -> '1K' (tables), or '1 KiB' with `long` (plot labels, prose); bytes where no unit divides."""
    for unit in ("G", "M", "K"):
        if n >= UNITS[unit] and n % UNITS[unit] == 0:
            return f"{n // UNITS[unit]} {unit}iB" if long else f"{n // UNITS[unit]}{unit}"
    return f"{n} B" if long else str(n)
