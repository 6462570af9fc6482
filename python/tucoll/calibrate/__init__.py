"""`tucoll calibrate`: the modelled machines held against what the seeds measured on the real ones.

The seeds' measurements are data/published/seeds.csv. Its fit set is the only thing a mechanism's
parameter is fitted on; the check set is only reported. Each machine model carries two per-message
mechanisms beside its links (sim/simgrid-patches): a matching cost per queue entry the receiving MPI
walks (smpi/match-cost) and a network interface's time per message, shared by a node's ranks
(smpi/nic-gap); and a time per contiguous piece that a local copy or a datatype engine handles
(copy_piece, charged by the library's simulated platform layer). The fit set's vendor time pins one
of the two per-message mechanisms per machine, its TuNA time the piece cost (the vendor's messages
are contiguous: it cannot); the rest is set from the machine's documentation (Polaris' two network
adapters among it), as its platform file says.

The vendor's P^2 messages cannot be simulated at the seeds' P (8192: 67 million messages), so its
time there comes from a closed form of the same model (vendor_time), held against simulation at
the P where both run (validation_points) and labelled analytic. TuNA's comes from a model of one
node's ranks run event by event (tuna_time) where the cache holds no simulation of it at that P
(8192 ranks take 20 GB and minutes per spec here).

The rooms: model (the mechanisms, the vendor's closed form, TuNA's one-node model), simulations (simulated points, their cache,
the Dask cluster), seeds (the fit, the calibrated platforms, the tables against the seeds), report
(docs/CALIBRATION.md), here (this machine), gpu (seed 002's GPU machines, simulated outright: their
platforms' parameters all come from sources, none is fitted).
"""

from tucoll.build import REPO_ROOT
from tucoll.calibrate.gpu import gpu_points, gpu_table
from tucoll.calibrate.here import (HERE_ROUNDS, HereFit, compared_time, fit_here, here_specs, here_table, measure_here, median_of_rounds,
                                   probe_and_measure_here, probe_here, read_rounds, simulate_probe,
                                   write_here_platform)
from tucoll.calibrate.model import (Blocks, Mechanisms, Phase, Topology, allreduce_steps, allreduce_time, best_tuna,
                                    fit_parameter, fit_tuna_parameter, queue_walk, tuna_lower_bound, tuna_phases,
                                    tuna_rounds, tuna_time, vendor_time)
from tucoll.calibrate.report import DOC, parameters_table, write_doc
from tucoll.calibrate.seeds import (CACHE, CROSSOVER_SIZES, MACHINE_LIST, OPTIONS, SEEDS, SIMGRID_OPTIONS, Machine, Model,
                                    Parameter, calibration_table,
                                    closed_form, fit, ideal_radices, models, ratio_by_p, seeds, validation_points,
                                    validation_table, write_platforms)
from tucoll.calibrate.simulations import SimCache, SimPoint, run_points, simulate_point

__all__ = ["CACHE", "HERE_ROUNDS", "CROSSOVER_SIZES", "DOC", "MACHINE_LIST", "OPTIONS", "REPO_ROOT", "SEEDS", "SIMGRID_OPTIONS", "Blocks", "HereFit", "Machine",
           "Mechanisms", "Model", "Parameter", "Phase", "SimCache", "SimPoint", "Topology", "allreduce_steps",
           "allreduce_time", "best_tuna", "calibration_table", "closed_form", "fit", "fit_here", "simulate_probe",
           "compared_time", "fit_parameter", "fit_tuna_parameter", "gpu_points", "gpu_table", "here_specs", "here_table", "ideal_radices", "measure_here", "median_of_rounds",
           "models",
           "parameters_table", "probe_and_measure_here", "probe_here", "read_rounds", "queue_walk", "ratio_by_p", "run_points", "seeds", "simulate_point",
           "tuna_lower_bound", "tuna_phases", "tuna_rounds", "tuna_time", "validation_points", "validation_table", "vendor_time", "write_doc",
           "write_here_platform", "write_platforms"]
