"""Independent simulations (a sweep's jobs, a figure's cases, calibration points) run in parallel
on a Dask cluster: local worker processes by default, one per core, or the workers of a running
scheduler (`--scheduler tcp://host:port`, e.g. `dask scheduler` and `dask worker`s in a batch job).

Each worker runs one simulation at a time (SMPI's simulator is single-threaded, and thousands of
simulated ranks take gigabytes). The caller gets results as they finish and stores them itself,
so that one process writes the datasets. A worker that closes, or is ended by SIGTERM or SIGHUP,
ends the simulations it started (sim.end_running): they run in sessions of their own, which no
signal to the worker reaches."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from distributed import WorkerPlugin

from tucoll import signals


class EndSimulations(WorkerPlugin):
    """A worker's simulations end with it."""

    name = "tucoll-end-simulations"
    # Registered once: registering it again (another client of the same scheduler) would tear it
    # down first on every worker, and its teardown ends the simulations they are running.
    idempotent = True

    def setup(self, worker) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # handlers can only be set from the main thread; teardown still covers a close
        previous = {signum: signal.getsignal(signum) for signum in signals.ENDING}

        def end(signum, frame):
            from tucoll import sim

            sim.end_running()
            if callable(previous[signum]):
                previous[signum](signum, frame)
            else:
                raise SystemExit(128 + signum)

        for signum in signals.ENDING:
            signal.signal(signum, end)

    def teardown(self, worker) -> None:
        from tucoll import sim

        sim.end_running()


@contextmanager
def client(scheduler: str | None = None, workers: int | None = None):
    """A Dask client: on the scheduler at `scheduler`, else on `workers` local worker processes."""
    from dask.distributed import Client, LocalCluster

    if scheduler:
        dask_client = Client(scheduler)
        cluster = None
    else:
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        dask_client = Client(cluster)
    try:
        dask_client.register_plugin(EndSimulations())
        yield dask_client
    finally:
        dask_client.close()
        if cluster is not None:
            cluster.close()


def run_unordered(fn: Callable[..., Any], items: Iterable[Any], *args: Any, scheduler: str | None = None,
                  workers: int | None = None) -> Iterator[tuple[Any, Any, BaseException | None]]:
    """Calls fn(item, *args) for each item on the cluster; yields (item, result, None) or
    (item, None, the exception) as each finishes. Items are submitted in the order given (put
    the longest first, so that the cluster does not end waiting on one of them)."""
    from dask.distributed import as_completed

    items = list(items)
    if not items:
        return
    with client(scheduler, workers) as dask_client:
        futures = {dask_client.submit(fn, item, *args, pure=False, priority=-i): item for i, item in enumerate(items)}
        for done in as_completed(futures):
            error = done.exception()
            yield futures[done], (None if error else done.result()), error
