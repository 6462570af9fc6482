"""Documentation generated from the registry, so that no second list of algorithms exists."""

from __future__ import annotations

import re
from pathlib import Path

BEGIN = "<!-- BEGIN GENERATED: algorithms (make docs) -->"
END = "<!-- END GENERATED: algorithms -->"


def describe_parameter(p: dict) -> str:
    """`radix` in [2, P], default 2: ...; a named parameter lists its choices."""
    if p.get("choices"):
        names = " \\| ".join(p["choices"])  # a bar inside a Markdown table cell
        return f"`{p['name']}` one of {names}, default {p['choices'][p['default']]}: {p['doc']}"
    return f"`{p['name']}` in [{p['min']}, {p['max']}], default {p['default']}: {p['doc']}"


def algorithm_table(registry: dict) -> str:
    """Markdown: one table per collective, one row per algorithm, parameters with ranges."""
    out: list[str] = []
    for collective, entry in registry["collectives"].items():
        out.append(f"**{collective}** — `tucoll_{collective}_with(spec, ...)`, environment `{entry['env']}`, "
                   f"default `{entry['default']}`\n")
        out.append("| algorithm | what it does | parameters (range, default) |")
        out.append("| --- | --- | --- |")
        for alg in entry["algorithms"]:
            params = "<br>".join(
                describe_parameter(p) for p in alg["params"]
            ) or "—"
            out.append(f"| `{alg['name']}` | {alg['summary']} | {params} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def replace_generated(text: str, table: str) -> str:
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise ValueError(f"markers {BEGIN!r} ... {END!r} not found")
    return pattern.sub(lambda _: f"{BEGIN}\n{table}{END}", text)


def is_current(path: Path, registry: dict) -> bool:
    text = path.read_text()
    return replace_generated(text, algorithm_table(registry)) == text


def write(path: Path, registry: dict) -> bool:
    """Rewrites the generated part of `path`; True when it changed."""
    text = path.read_text()
    new = replace_generated(text, algorithm_table(registry))
    if new != text:
        path.write_text(new)
    return new != text
