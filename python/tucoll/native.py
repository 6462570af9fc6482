"""The library itself, through ctypes: its registry, what it says about a spec on a given
communicator shape, and its tuning tables, answered by the same code that runs the collectives —
no MPI_Init, no launcher. The simulated build compiles the same sources, so the MPI build's libtucoll.so answers
for it too."""

from __future__ import annotations

import ctypes
import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from tucoll import signals
from tucoll.build import REPO_ROOT

MPI_SUCCESS = 0


class SpecError(ValueError):
    """A spec the library rejects at that shape; the message is the library's."""


@dataclass(frozen=True)
class SpecProperties:
    canonical: str         # every parameter spelt out (defaults included), as statistics report it
    concurrent_flows: int  # point-to-point flows the whole job has in flight at once; -1: unknown
    uses_max_block: bool   # it reduces M (the largest block) itself there, so auto's reduction replaces it
    meta: bool             # it chooses another algorithm at run time (auto)


@dataclass(frozen=True)
class ParamRange:
    low: int
    high: int | None  # None: unbounded
    span: int         # the largest value that still differs from "all at once" / the top of the range


class _SpecProperties(ctypes.Structure):
    _fields_ = [("canonical", ctypes.c_char * 128), ("concurrent_flows", ctypes.c_int64),
                ("uses_max_block", ctypes.c_int), ("meta", ctypes.c_int), ("reserved", ctypes.c_int * 8)]


class TuningTable:
    """A tuning table held by the library (core/tuning.h), the one reader, checker and writer of
    the format: what `auto` would look up is what this looks up."""

    def __init__(self, library: "Library", text: str, origin: str, collective: str = "alltoallv"):
        self._library, self._lib = library, library._lib
        self._handle = ctypes.c_void_p()
        rc = self._lib.tucoll_tuning_table_parse(collective.encode(), text.encode(), origin.encode(),
                                                 ctypes.byref(self._handle))
        if rc != MPI_SUCCESS:
            raise library._error(rc)
        self.features: list[str] = json.loads(self.json())["features"]

    def __del__(self):
        if getattr(self, "_handle", None):
            self._lib.tucoll_tuning_table_free(self._handle)

    def check(self) -> None:
        """SpecError naming the first spec the library would not run at its entry's shape."""
        rc = self._lib.tucoll_tuning_table_check(self._handle)
        if rc != MPI_SUCCESS:
            raise self._library._error(rc)

    def json(self) -> str:
        return self._lib.tucoll_tuning_table_json(self._handle).decode()

    def as_dict(self) -> dict:
        return json.loads(self.json())

    def entry(self, nprocs: int, ppn: int) -> dict | None:
        """The entry auto uses on (P, Q): the nearest shape."""
        text = self._lib.tucoll_tuning_table_entry(self._handle, nprocs, ppn)
        return json.loads(text.decode()) if text else None

    def lookup(self, nprocs: int, ppn: int, values: list[float]) -> str:
        spec = ctypes.c_char_p()
        array = (ctypes.c_double * len(values))(*values)
        rc = self._lib.tucoll_tuning_table_lookup(self._handle, nprocs, ppn, array, len(values), ctypes.byref(spec))
        if rc != MPI_SUCCESS:
            raise self._library._error(rc)
        return spec.value.decode()

    def reduces(self, nprocs: int, ppn: int) -> bool:
        """Whether auto reduces the block-size features at (P, Q): not where its entry names one
        spec for every workload."""
        out = ctypes.c_int()
        rc = self._lib.tucoll_tuning_table_reduces(self._handle, nprocs, ppn, ctypes.byref(out))
        if rc != MPI_SUCCESS:
            raise self._library._error(rc)
        return bool(out.value)

    def merge(self, online: "TuningTable", origin: str) -> int:
        """Adds the online table's entries for shapes this one lacks; how many were added."""
        added = ctypes.c_int()
        rc = self._lib.tucoll_tuning_table_merge(self._handle, online._handle, origin.encode(), ctypes.byref(added))
        if rc != MPI_SUCCESS:
            raise self._library._error(rc)
        return added.value


class Library:
    def __init__(self, path: Path):
        self.path = path
        lib = ctypes.CDLL(str(path))
        signals.reassert()  # its MPI's constructors may have taken the tools' signals
        lib.tucoll_registry_json.restype = ctypes.c_char_p
        lib.tucoll_error_string.restype = ctypes.c_char_p
        lib.tucoll_error_string.argtypes = [ctypes.c_int]
        lib.tucoll_spec_properties.restype = ctypes.c_int
        lib.tucoll_spec_properties.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int,
                                               ctypes.POINTER(_SpecProperties)]
        lib.tucoll_param_range.restype = ctypes.c_int
        lib.tucoll_param_range.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                           ctypes.c_int] + [ctypes.POINTER(ctypes.c_long)] * 3
        table, text = ctypes.c_void_p, ctypes.c_char_p
        lib.tucoll_tuning_table_parse.argtypes = [text, text, text, ctypes.POINTER(table)]
        lib.tucoll_tuning_table_free.argtypes = [table]
        lib.tucoll_tuning_table_free.restype = None
        lib.tucoll_tuning_table_check.argtypes = [table]
        lib.tucoll_tuning_table_json.argtypes = [table]
        lib.tucoll_tuning_table_json.restype = text
        lib.tucoll_tuning_table_entry.argtypes = [table, ctypes.c_int, ctypes.c_int]
        lib.tucoll_tuning_table_entry.restype = text
        lib.tucoll_tuning_table_lookup.argtypes = [table, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_double),
                                                   ctypes.c_int, ctypes.POINTER(text)]
        lib.tucoll_tuning_table_merge.argtypes = [table, table, text, ctypes.POINTER(ctypes.c_int)]
        lib.tucoll_tuning_table_reduces.argtypes = [table, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
        lib.tucoll_spec_parse.argtypes = [text, ctypes.POINTER(text)]
        self._lib = lib

    def tuning_table(self, text: str, origin: str = "(table)", collective: str = "alltoallv") -> TuningTable:
        """Parses a tuning table; SpecError with the library's message when it is not one."""
        return TuningTable(self, text, origin, collective)

    def registry(self) -> dict:
        return json.loads(self._lib.tucoll_registry_json().decode())

    def _error(self, rc: int) -> SpecError:
        return SpecError(self._lib.tucoll_error_string(rc).decode())

    def parse_spec(self, spec: str) -> tuple[str, dict[str, int | str]]:
        """("tuna", {"radix": 4}) from "tuna:radix=4", as the library parses it (K/M/G applied;
        named values such as copy=hybrid stay words); SpecError when it is malformed."""
        out = ctypes.c_char_p()
        rc = self._lib.tucoll_spec_parse(spec.encode(), ctypes.byref(out))
        if rc != MPI_SUCCESS:
            raise self._error(rc)
        parsed = json.loads(out.value.decode())
        return parsed["name"], parsed["params"]

    def spec_properties(self, collective: str, spec: str, nprocs: int, ppn: int | None = None) -> SpecProperties:
        """What the library says about `spec` with `nprocs` ranks, `ppn` per node (default: one
        node); SpecError when the spec is not valid there."""
        out = _SpecProperties()
        rc = self._lib.tucoll_spec_properties(collective.encode(), spec.encode(), nprocs, ppn or nprocs,
                                              ctypes.byref(out))
        if rc != MPI_SUCCESS:
            raise self._error(rc)
        return SpecProperties(out.canonical.decode(), out.concurrent_flows, bool(out.uses_max_block), bool(out.meta))

    def param_range(self, collective: str, algorithm: str, param: str, nprocs: int, ppn: int) -> ParamRange:
        low, high, span = ctypes.c_long(), ctypes.c_long(), ctypes.c_long()
        rc = self._lib.tucoll_param_range(collective.encode(), algorithm.encode(), param.encode(), nprocs, ppn,
                                          ctypes.byref(low), ctypes.byref(high), ctypes.byref(span))
        if rc != MPI_SUCCESS:
            raise self._error(rc)
        return ParamRange(low.value, None if high.value < 0 else high.value, span.value)


def library_path(build_dir: str | os.PathLike | None = None) -> Path:
    """libtucoll.so of an MPI build: `build_dir` when it is one, else TUCOLL_BUILD_DIR, else build/."""
    for candidate in (build_dir, os.environ.get("TUCOLL_BUILD_DIR"), REPO_ROOT / "build"):
        if candidate and (Path(candidate) / "lib" / "libtucoll.so").is_file():
            return (Path(candidate) / "lib" / "libtucoll.so").resolve()
    raise FileNotFoundError("libtucoll.so not found: build tucoll first (make build)")


@lru_cache(maxsize=None)
def _load(path: Path) -> Library:
    return Library(path)


def library(build_dir: str | os.PathLike | None = None) -> Library:
    return _load(library_path(build_dir))
