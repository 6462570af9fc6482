"""`tucoll sim`: run tucoll-bench on a SimGrid-modelled cluster (SMPI) and label the times as simulated.

The rooms: platforms (the modelled machines, their fingerprints, derived copies), command (a run's
arguments, command line and environment), memory (what a run maps, and the options that keep it
within the kernel's limit), run (refusing, starting and ending simulations), errors.
"""

from tucoll.bench import registry  # noqa: F401 (sim.registry: the MPI build's, the same sources)
from tucoll.build import REPO_ROOT
from tucoll.sim.command import (SimRun, algorithm_names, bench_specs, build_command, largest_buffer, option_values,
                                relabel_mapping, stale_table, tuning_table, without_options)
from tucoll.sim.errors import SimError
from tucoll.sim.memory import (MAPS_BASE, MAPS_OF_GUARDS, MAPS_PER_RANK, SHARED_BLOCK_MAX, SHARED_BLOCK_MIN,
                               SHARED_BUFFERS_PER_RANK, mapping_options, mappings_needed, max_map_count,
                               shared_block_bytes, shared_views)
from tucoll.sim.platforms import (PLATFORM_DIR, Platform, derived_platform, hostfile_lines, model_of, platform_names,
                                  platforms)
from tucoll.sim.run import (MAX_CONCURRENT_FLOWS, check_flows, concurrent_flows, end_running, run_simulation, sim_build,
                            simulate)

__all__ = ["MAPS_BASE", "MAPS_OF_GUARDS", "MAPS_PER_RANK", "MAX_CONCURRENT_FLOWS", "PLATFORM_DIR", "REPO_ROOT",
           "SHARED_BLOCK_MAX", "SHARED_BLOCK_MIN", "SHARED_BUFFERS_PER_RANK", "Platform", "SimError", "SimRun",
           "algorithm_names", "bench_specs", "build_command", "check_flows", "concurrent_flows", "derived_platform",
           "end_running", "hostfile_lines", "largest_buffer", "mapping_options", "mappings_needed", "max_map_count",
           "model_of", "option_values", "platform_names", "platforms", "registry", "relabel_mapping", "run_simulation",
           "shared_block_bytes", "shared_views", "sim_build", "simulate", "stale_table", "tuning_table",
           "without_options"]
