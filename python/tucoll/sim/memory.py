"""What a simulation of P ranks maps in one process, and the SimGrid options that keep it within
the kernel's limit."""

from __future__ import annotations

from pathlib import Path

from tucoll.sim.errors import SimError


# What one simulated rank maps: the segments of its private copy of the program (SMPI privatizes
# by loading a copy per rank), its context stack with a guard page, its shared-malloc views.
# Measured on tuna:radix=4 runs: 11 370 mappings at P = 1024 (9 322 without guard pages) and
# 68 714 at P = 8192 while running; 12 883 at P = 1024 once list messages travel from a shared
# stand-in (Requests::stand_in).
MAPS_PER_RANK = 11
MAPS_OF_GUARDS = 2
MAPS_BASE = 4096

# Global shared malloc maps one block of a file over and over each shared buffer, one mapping per
# whole block (the rest of a buffer, and any buffer under a block, is one mapping, counted in
# MAPS_PER_RANK). Small blocks keep every buffer on the same few physical pages, which the
# algorithms' local copies then find in cache: allgather at P = 32 up to 1 MiB per rank takes
# 3.3 s of wall time with SimGrid's 1 MiB block and 4.6 s with 64 MiB. But a buffer of many
# blocks is many mappings: P = 4096 at 1 KiB (4 MiB buffers) passed the kernel's limit with 1 MiB
# blocks while allocating ("Could not map folded virtual memory"). So the block is the smallest
# that keeps the run within the limit.
SHARED_BLOCK_MIN = 1 << 20  # SimGrid's default
SHARED_BLOCK_MAX = 64 << 20
# The bench's send and receive buffers, the algorithm's scratch, and the stand-in its messages of
# several ranges travel from (Requests::stand_in: up to twice the largest message), with room.
SHARED_BUFFERS_PER_RANK = 6


def max_map_count() -> int | None:
    try:
        return int(Path("/proc/sys/vm/max_map_count").read_text())
    except (OSError, ValueError):
        return None


def shared_views(buffer_bytes: int, block: int) -> int:
    """Mappings a rank's shared buffers of up to `buffer_bytes` add with blocks of `block` bytes."""
    return SHARED_BUFFERS_PER_RANK * (buffer_bytes // block)


def mappings_needed(nprocs: int, views_per_rank: int = 0) -> int:
    """Memory mappings a run of `nprocs` ranks makes; `views_per_rank`: those its shared buffers
    add beyond one per buffer."""
    return nprocs * (MAPS_PER_RANK + views_per_rank) + MAPS_BASE


def shared_block_bytes(nprocs: int, buffer_bytes: int | None, limit: int | None) -> int:
    """The shared-malloc block for `nprocs` ranks whose largest buffer is `buffer_bytes` (None:
    not known, as for a pattern file or an application): the smallest, from SimGrid's 1 MiB up,
    that keeps the run's mappings within the kernel's `limit`."""
    if buffer_bytes is None:
        return SHARED_BLOCK_MAX
    block = SHARED_BLOCK_MIN
    while (block < SHARED_BLOCK_MAX and limit is not None
           and mappings_needed(nprocs, shared_views(buffer_bytes, block)) > limit):
        block *= 2
    return block


def mapping_options(nprocs: int, limit: int | None, views_per_rank: int = 0) -> list[str]:
    """SimGrid options that keep a run of `nprocs` ranks within the kernel's `limit` of memory
    mappings per process (vm.max_map_count, 65 530 by default), or SimError when none can;
    `views_per_rank`: the mappings a rank's shared buffers add beyond one per buffer.

    Past the limit the simulator dies while loading rank copies ("dlopen failed: failed to map
    segment"). Dropping the stacks' guard pages saves two mappings per rank, which lets the
    default limit hold up to about 6 900 ranks instead of 5 600; beyond that the limit has to be
    raised.
    """
    needed = mappings_needed(nprocs, views_per_rank)
    if limit is None or needed <= limit:
        return []
    if needed - nprocs * MAPS_OF_GUARDS <= limit:
        return ["--cfg=contexts/guard-size:0"]
    raise SimError(f"simulating {nprocs} ranks maps about {needed:,} memory regions in one process (a copy of the "
                   f"program and a stack per rank), more than the kernel allows (vm.max_map_count = {limit:,}); "
                   f"raise it, e.g. `sudo sysctl -w vm.max_map_count={1 << (needed - 1).bit_length()}`")
