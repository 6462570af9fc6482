"""`tucoll figure`: the papers' scaling figures, reproduced on simulated machines.

Each figure is a list of simulation cases plus a plot. Results accumulate in one store,
docs/figures/data/simulated.csv, keyed by platform, P, ranks per node, mapping, collective,
workload, size and the requested spec: a case runs only what the store lacks, so an interrupted
figure resumes where it stopped and figures share cases (TuNA's radix sweep at P = 1024 also
serves the TuNA-vs-vendor figure).
"""

from tucoll.build import REPO_ROOT
from tucoll.figures.core import (FIGURE_DIR, KEY, STORE, Case, Figure, append_rows, done_keys, earlier_sources,
                                 load_store, render,
                                 reuse_sweep_rows, run_figure, selection, simulate_case, size_bytes, store_output)
from tucoll.figures.auto_check import auto_cases, plot_auto
from tucoll.figures.hierarchical import hier_cases, plot_hier
from tucoll.figures.ipc import ipc_cases, plot_ipc
from tucoll.figures.sparbit import plot_sparbit, sparbit_cases
from tucoll.figures.sparse import plot_sparse, sparse_cases
from tucoll.figures.tuna import plot_radix_trends, plot_vendor, radix_trend_cases, tuna_specs, vendor_cases


FIGURES = {f.name: f for f in [
    Figure("radix-trends", "TuNA radix trends at P = 1024 and 4096, and at 2048 calibrated (seed 000 Fig. 7)", radix_trend_cases, plot_radix_trends),
    Figure("tuna-vs-vendor", "TuNA (best radix) vs vendor alltoallv over P (seed 000 Figs. 8-9)", vendor_cases,
           plot_vendor),
    Figure("hierarchical", "coalesced vs staggered hierarchical TuNA (seed 000 Figs. 10, 13)", hier_cases, plot_hier),
    Figure("sparbit-heatmap", "fastest allgather per (P, size), sequential and cyclic (seed 001 Fig. 5)",
           sparbit_cases, plot_sparbit),
    Figure("sparse-scaling", "sparse dynamic exchange on real matrices (seed 004 Figs. 5-8)", sparse_cases,
           plot_sparse),
    Figure("auto-check", "auto against the fastest candidate in the same run (seed 003)", auto_cases, plot_auto),
    Figure("ipc-gpu", "IPC alltoall on simulated GPU clusters (seed 002 Figs. 4, 8, 9)", ipc_cases, plot_ipc),
]}

__all__ = ["FIGURES", "FIGURE_DIR", "KEY", "REPO_ROOT", "STORE", "Case", "Figure", "append_rows", "done_keys",
           "earlier_sources", "load_store", "plot_radix_trends", "plot_sparbit", "render", "reuse_sweep_rows", "run_figure", "selection",
           "simulate_case", "size_bytes", "store_output", "tuna_specs"]
