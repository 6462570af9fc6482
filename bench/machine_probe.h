// `tucoll-bench machine`: the microbenchmarks that `tucoll calibrate --here` fits a platform's
// mechanisms on (ping-pong latency and bandwidth, message rate with many requests outstanding, the
// cost of a receive queue walked to its end, one core's memcpy, what a tucoll call costs before its
// exchange). Ranks 0 and 1 measure; any others wait. Prints CSV rows: test,bytes,count,seconds
// (seconds per repetition, the median of --iters).
#pragma once

#include <mpi.h>

namespace tucoll::bench {

int run_machine_probe(MPI_Comm comm, int iters);

}  // namespace tucoll::bench
