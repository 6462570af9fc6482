"""The summary of scripts/gpu-check.sh: its tests, the GPU table against the copy limit, and the
CPU table with auto's ratios, as Markdown on stdout (the script also writes it to summary.md).

Reads what the script wrote into --out: facts.txt, tests.log, gpu_*.csv (a tucoll-bench CSV per
run), copy_limit.txt, copy_start.txt, cpu_bench.csv and stages.txt (budget.sh's log). Standard
library only: the GPU machine's Python is used as it is. It is written for what a failed run
leaves: a file missing, cut short or garbled loses its own rows or section, never the summary.
"""
import argparse
import csv
import json
import re
from pathlib import Path

PLATFORMS = Path(__file__).resolve().parents[2] / "sim" / "platforms" / "platforms.json"


def text(path):
    return path.read_text(errors="replace") if path.exists() else ""


def rows(path):
    """A tucoll-bench CSV's rows that hold a measurement (a median time that is a positive number)."""
    kept = []
    for r in csv.DictReader(text(path).splitlines()):
        try:
            if r["algorithm"] and float(r["median_us"]) > 0 and int(r["nprocs"]) > 0 and int(r["size"]) >= 0:
                kept.append(r)
        except (KeyError, TypeError, ValueError):
            pass
    return kept


def number(value, default=0.0):
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def size_text(b):
    b = int(b)
    for unit, n in (("M", 1 << 20), ("K", 1 << 10)):
        if b >= n and b % n == 0:
            return f"{b // n} {unit}iB"
    return f"{b} B"


def spec(r):
    return r["algorithm"] + (":" + r["params"] if r.get("params") else "")


def short_spec(r):
    """The spec without ipc's and staged's default parameters, for the tables."""
    s = spec(r)
    for default in ("ipc_threshold=4096", "memcpy_threshold=524288", "overlap=1", "uniform_check=0"):
        s = s.replace("," + default, "").replace(default + ",", "").replace(":" + default, "")
    return s


def tests_section(out):
    lines = text(out / "tests.log").splitlines()
    keep = [l.strip() for l in lines
            if re.search(r"tests passed|tests failed|test_ipc_gpu np|SKIP|\*\*\*(Failed|Timeout|Exception)", l)]
    return ["## Tests", ""] + [f"- {l}" for l in keep or ["no test log"]] + [""]


def copy_limits(out):
    """{(P, block): GB/s of one device-to-device copy of P*P*block bytes}."""
    limits = {}
    for line in text(out / "copy_limit.txt").splitlines():
        f = line.split()
        try:
            if len(f) == 5 and float(f[4]) > 0:
                limits[(int(f[0]), int(f[1]))] = float(f[4])
        except ValueError:
            pass
    return limits


def gpu_section(out):
    data = sorted((r for path in sorted(out.glob("gpu_*.csv")) for r in rows(path)),
                  key=lambda r: (r["collective"], int(r["nprocs"]), int(r["size"]), spec(r)))
    if not data:
        return ["## ipc and staged on one GPU", "", "SKIP: no GPU measurements (no GPU here)", ""]
    limits = copy_limits(out)
    head = ["## ipc and staged on one GPU (measured)", "",
            "Time per call (median over iterations of the slowest rank), the bytes it moves between ranks"
            " and itself, and the copy limit: the same bytes in one device-to-device copy on this card.", "",
            "| P | call | block | spec | median µs | moved | GB/s | copy limit µs | limit / time | check |",
            "| ---: | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    body = []
    for r in data:
        p, block = int(r["nprocs"]), int(r["size"])
        moved = number(r.get("total_bytes")) or p * p * block  # alltoall's CSV has no total_bytes
        us = float(r["median_us"])
        gbps = limits.get((p, block))
        limit = moved / (gbps * 1e3) if gbps else None
        body.append(f"| {p} | {r['collective']} | {size_text(block)} | {short_spec(r)} | {us:.1f} | "
                    f"{moved / 1e6:.2f} MB | {moved / us / 1e3:.1f} | "
                    f"{'%.1f' % limit if limit else '-'} | {'%.2f' % (limit / us) if limit else '-'} | "
                    f"{'ok' if r['ok'] == '1' else 'WRONG' if r['ok'] == '0' else r['ok']} |")
    return head + body + [""]


def modelled_starts():
    """{(what, bytes): µs} that thetagpu-like (8 A100) charges per copy, for comparison: ipc's kernel
    start, the copy engine's start with the bytes at the GPU's local copy rate (a device copy, as
    the MPI's own pieces pay it: smpi/device-copy), staged's host copies."""
    try:
        entry = json.loads(PLATFORMS.read_text())["thetagpu-like"]
        ipc, local = entry["ipc"], entry["copy_bandwidth"]
    except (OSError, KeyError, ValueError):
        return {}
    host = ipc["host_latency"] * 1e6
    device = {("d2d", b): (ipc["memcpy_latency"] + b / local) * 1e6 for b in (16, 131072)}
    return {("kernel", 0): ipc["kernel_latency"] * 1e6, **device, ("d2h", 16): host, ("h2d", 16): host}


def copy_start_section(out):
    measured = [f for f in (line.split() for line in text(out / "copy_start.txt").splitlines())
                if len(f) == 4 and f[1].isdigit() and number(f[2], None) is not None and number(f[3], None) is not None]
    if not measured:
        return ["## What a copy costs to start", "", "SKIP: no GPU measurements (no GPU here)", ""]
    model = modelled_starts()
    head = ["## What a copy costs to start on this card (measured)", "",
            "Launch to completion, timed on the host (median and best of 200): an empty kernel, a device copy"
            " (16 B; 128 KiB, Open MPI 4.1.1's piece), a pinned host copy each way; beside them what the"
            " simulated DGX A100 (thetagpu-like, from seed 002's Fig. 4) charges per copy.", "",
            "| copy | bytes | median µs | best µs | thetagpu-like µs |", "| --- | ---: | ---: | ---: | ---: |"]
    body = []
    for what, nbytes, median, best in measured:
        m = model.get((what, int(nbytes)))
        body.append(f"| {what} | {size_text(nbytes) if int(nbytes) else '-'} | {float(median):.2f} | {float(best):.2f} "
                    f"| {'%.2f' % m if m is not None else '-'} |")
    return head + body + [""]


def command_text(command):
    """A logged command without its folders, shortened: `mpiexec -np 8 test_ipc_gpu`."""
    short = " ".join(word.rsplit("/", 1)[-1] if "/" in word else word for word in command.split())
    return short if len(short) <= 90 else short[:87] + "..."


def stage_lines(out):
    """budget.sh's log, each line split at its tabs."""
    return [line.split("\t") for line in text(out / "stages.txt").splitlines()]


def stages_section(out):
    """Each stage's seconds, and the commands the budget stopped or never started: where a hang
    cost the check its minutes, and which tables below are short for it."""
    lines = stage_lines(out)
    budget = next((f[1] for f in lines if f[0] == "budget" and len(f) == 2), None)
    seconds = {f[1]: int(f[2]) for f in lines if f[0] == "stage" and len(f) == 3}
    cut = {}
    for f in lines:
        if f[0] in ("timeout", "skipped") and len(f) == 4:
            what = (f"stopped after {f[2]} s" if f[0] == "timeout" else "not started: budget spent")
            cut.setdefault(f[1], []).append(f"`{command_text(f[3])}` {what}")
    if not seconds:
        return []
    head = ["## Stages", "", f"Every command bounded by what was left of the {budget} s budget"
            " (scripts/gpu-check/budget.sh)." if budget else "", "",
            "| stage | seconds | cut short |", "| --- | ---: | --- |"]
    body = [f"| {name} | {s} | {'; '.join(cut.get(name, [])) or '-'} |" for name, s in seconds.items()]
    return head + body + [""]


def cpu_section(out):
    data = rows(out / "cpu_bench.csv")
    if not data:
        return ["## alltoallv on the CPU", "", "no CPU measurements (cpu_bench.csv holds no rows)", ""]
    p = data[0]["nprocs"]
    head = [f"## alltoallv on the CPU, {p} ranks, GPU hidden (measured)", "",
            "Uniform block sizes in [0, S]; every algorithm and auto against vendor (the MPI's own"
            " MPI_Alltoallv), interleaved in one job.", "",
            "| S | vendor µs | best (µs) | auto ran | auto µs | auto / best | vendor / auto | wrong |",
            "| ---: | ---: | --- | --- | ---: | ---: | ---: | --- |"]
    body = []
    for size in sorted({int(r["size"]) for r in data}):
        at = [r for r in data if int(r["size"]) == size]
        by = {r["algorithm"]: r for r in at}
        best = min(at, key=lambda r: float(r["median_us"]))
        vendor, auto = by.get("vendor"), by.get("auto")
        wrong = ", ".join(short_spec(r) for r in at if r["ok"] == "0") or "-"
        if not (vendor and auto):
            continue
        v, a, b = float(vendor["median_us"]), float(auto["median_us"]), float(best["median_us"])
        body.append(f"| {size_text(size)} | {v:.1f} | {short_spec(best)} ({b:.1f}) | {auto.get('chosen', '')} | "
                    f"{a:.1f} | {a / b:.2f} | {v / a:.2f} | {wrong} |")
    return head + body + [""]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seconds", type=int, default=0)
    args = ap.parse_args()
    facts = text(args.out / "facts.txt")
    gpu = re.search(r"^name, memory.*\n(.+)$", facts, re.M)
    where = gpu.group(1).split(",")[0] if gpu else "no GPU here: a rehearsal, GPU stages skipped"
    cut = sum(f[0] in ("timeout", "skipped") for f in stage_lines(args.out))
    wall = f"Wall time {args.seconds} s." + (f" {cut} command(s) cut short by the budget: see Stages, last." if cut else "")
    lines = [f"# scripts/gpu-check.sh: {where}", "", wall, ""]
    for section in (tests_section, gpu_section, copy_start_section, cpu_section, stages_section):
        try:
            lines += section(args.out)
        except Exception as error:  # one section's unreadable file must not cost the others
            lines += [f"## {section.__name__}: not summarised ({type(error).__name__}: {error})", ""]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
