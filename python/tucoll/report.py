"""Rich tables of benchmark results."""

from __future__ import annotations

import sys

import pandas as pd
from rich.console import Console
from rich.table import Table

from tucoll import sizes as units
from tucoll.bench import spec


def console() -> Console:
    """A console that keeps tables readable when output goes to a file or a CI log."""
    return Console() if sys.stdout.isatty() else Console(width=140)


def with_speedup(frame: pd.DataFrame) -> pd.DataFrame:
    """Adds `speedup` = vendor median / median, per (size, dist, type)."""
    keys = ["size", "dist", "type"]
    vendor = frame[frame["algorithm"] == "vendor"].set_index(keys)["median_us"].rename("vendor_us")
    out = frame.join(vendor, on=keys)
    out["speedup"] = out["vendor_us"] / out["median_us"]
    return out


def comparison_table(frame: pd.DataFrame, title: str) -> Table:
    frame = with_speedup(frame)
    table = Table(title=title, title_justify="left")
    for name, justify in (("size", "right"), ("algorithm", "left"), ("median µs", "right"), ("min µs", "right"),
                          ("max µs", "right"), ("vs vendor", "right"), ("rounds", "right"),
                          ("messages", "right"), ("scratch", "right"), ("ok", "center")):
        table.add_column(name, justify=justify)
    for size, group in frame.groupby("size", sort=True):
        best = group["median_us"].min()
        for _, row in group.iterrows():
            style = "bold green" if row["median_us"] == best else None
            speedup = "" if pd.isna(row["speedup"]) else f"{row['speedup']:.2f}x"
            label = spec(row)
            if row.get("chosen") and row["chosen"] != label:  # a meta-algorithm: what it ran
                label += f" → {row['chosen']}"
            table.add_row(units.text(int(size)), label, f"{row['median_us']:.2f}", f"{row['min_us']:.2f}",
                          f"{row['max_us']:.2f}", speedup, str(row["rounds"]), str(row["messages"]),
                          units.text(int(row["scratch_bytes"])), str(row["ok"]), style=style)
        table.add_section()
    return table


def print_comparison(frame: pd.DataFrame, title: str, out: Console | None = None) -> None:
    (out or console()).print(comparison_table(frame, title))
