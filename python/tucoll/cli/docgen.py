"""tucoll docs: the registry's algorithm table as Markdown."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tucoll import docs
from tucoll.bench import registry
from tucoll.build import Build

from .common import with_build


def cmd_docs(args: argparse.Namespace) -> int:
    reg = registry(Build.find(args.build_dir))
    if args.write:
        changed = docs.write(Path(args.write), reg)
        print(f"{args.write}: {'updated' if changed else 'already current'}")
        return 0
    if args.check:
        if docs.is_current(Path(args.check), reg):
            return 0
        print(f"{args.check}: the algorithm table differs from the registry; run `make docs`", file=sys.stderr)
        return 1
    print(docs.algorithm_table(reg), end="")
    return 0


def add_docs(sub) -> None:
    doc = with_build(sub.add_parser("docs", help="the registry's algorithm table as Markdown"))
    group = doc.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="FILE", help="replace the generated table in FILE")
    group.add_argument("--check", metavar="FILE", help="exit 1 if FILE's generated table is out of date")
    doc.set_defaults(func=cmd_docs)
