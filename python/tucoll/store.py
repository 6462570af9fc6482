"""Append-only CSV stores of measurements, shared by `tucoll figure` and `tucoll sweep`.

A store is one CSV file (optionally gzip-compressed: `.csv.gz`) that only ever grows: rows are
appended after each run, columns the file lacks are added at the end (older rows then have empty
cells there, which `fill` can set later), and the order of existing columns never changes. A key (a list of columns) names one
measurement; a run measures only the keys the store does not hold yet, so it resumes where an
interrupted one stopped.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

# Columns kept as text even when they look numeric ("radix=4", "1", "-").
TEXT_COLUMNS = {"params": str, "ok": str, "path": str, "requested": str, "chosen": str, "failed": str, "model": str,
                "sources": str}


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Serializes writers (two runs may share a store, one per core)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def load(path: Path, key: list[str]) -> pd.DataFrame:
    """The store's rows; a key column the file predates reads as empty."""
    if not path.is_file():
        return pd.DataFrame(columns=key)
    frame = pd.read_csv(path, dtype=TEXT_COLUMNS, keep_default_na=False, low_memory=False)
    for column in key:
        if column not in frame.columns:
            frame[column] = ""
    return frame


def latest(frame: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    """The last row stored for each key: a measurement run again (refreshed, retried) supersedes
    the earlier one, which the store keeps."""
    return frame.drop_duplicates(key, keep="last")


def sources_of(frame: pd.DataFrame) -> pd.Series:
    """The library sources (build.sources_fingerprint) each row was measured or simulated with;
    empty for rows stored before runs kept them."""
    return frame.get("sources", pd.Series("", index=frame.index, dtype=str)).fillna("")


def append(path: Path, rows: pd.DataFrame) -> None:
    """Appends `rows` in the file's column order, adding the columns it lacks at the end."""
    with locked(path):
        if not path.is_file():
            rows.to_csv(path, index=False)
            return
        header = pd.read_csv(path, nrows=0).columns.tolist()
        extra = [c for c in rows.columns if c not in header]
        if extra:
            old = pd.read_csv(path, dtype=str, keep_default_na=False)
            for column in extra:
                old[column] = ""
            old.to_csv(path, index=False)
            header += extra
        rows.reindex(columns=header).to_csv(path, mode="a", header=False, index=False)


def fill(path: Path, where: dict[str, str], column: str, value: str) -> int:
    """Sets `column` to `value` in the rows whose columns equal `where` (as text) and whose
    `column` is empty, adding the column if need be; returns how many rows changed. The one
    rewrite of stored rows: a value measured later for rows that predate its column."""
    with locked(path):
        data = pd.read_csv(path, dtype=str, keep_default_na=False)
        if column not in data.columns:
            data[column] = ""
        mask = data[column] == ""
        for name, wanted in where.items():
            mask &= data[name] == str(wanted)
        data.loc[mask, column] = value
        # Written beside and renamed over: an interrupted rewrite leaves the store as it was.
        temp = path.with_name(path.name + ".tmp" + "".join(path.suffixes[-1:]))
        data.to_csv(temp, index=False)
        temp.replace(path)
        return int(mask.sum())


def keys(frame: pd.DataFrame, key: list[str]) -> set[tuple]:
    """The keys a frame holds."""
    if frame.empty:
        return set()
    return set(frame[key].itertuples(index=False, name=None))
