"""The autotuner (seed 003): sensitivity analysis of block-size statistics, regression models of
alltoallv time, and the lookup table the library's `auto` algorithm reads.

Data: a sweep dataset (tucoll sweep). A *configuration* is one workload on one machine — source,
P, ranks per node, mapping, distribution, size — and holds one row per algorithm spec timed on it.
Models predict log(time) from the machine's shape, block-size statistics and the spec; they are
judged by MAPE and, what matters, by the regret of the spec they would pick: the measured time of
the spec predicted fastest over the measured time of the fastest, per test configuration.

The rooms: data (the rows, the statistics, a spec's parts), analysis, models, reductions (what
auto's allreduce saves a spec), tables (built, held and looked up by the library, merged, written).
"""

from tucoll.tuning.data import (CONFIG, RUNTIME_FEATURES, STATS, TuningError, library_errors, library_sources, load,
                                spec_parts)
from tucoll.tuning.analysis import Analysis, analyze, plot_correlation, within_group_ranks
from tucoll.tuning.models import (FitResult, ModelResult, REGRET_TIE, SEARCHED, SPLIT, chosen_model, describe, design,
                                  fit, geomean, mape, model_grid, regrets, split_configs)
from tucoll.tuning.reductions import (ReductionSharing, reduction_charges, reduction_cost, reduction_sharing,
                                      row_charges)
from tucoll.tuning.tables import (TABLE_FORMAT, TABLE_STEPS_PER_OCTAVE, TABLE_VERSION, Table, build_table,
                                  compare_tables, entry_rules, entry_specs, held, log_grid, lookup, merge_online,
                                  merge_rules, nearest_entry, reduces, single_spec, table_choices, table_regret,
                                  write_table)

__all__ = ["Analysis", "CONFIG", "FitResult", "ModelResult", "REGRET_TIE", "RUNTIME_FEATURES", "ReductionSharing",
           "SEARCHED", "SPLIT", "STATS", "TABLE_FORMAT", "TABLE_STEPS_PER_OCTAVE", "TABLE_VERSION", "Table",
           "TuningError", "analyze", "build_table", "chosen_model", "compare_tables", "describe", "design",
           "entry_rules", "entry_specs", "fit", "geomean", "held", "library_errors", "library_sources", "load",
           "log_grid", "lookup",
           "mape", "merge_online", "merge_rules", "model_grid", "nearest_entry", "plot_correlation", "reduces",
           "reduction_charges", "reduction_cost", "reduction_sharing", "regrets", "row_charges", "single_spec",
           "spec_parts", "split_configs", "table_choices", "table_regret", "within_group_ranks", "write_table"]
