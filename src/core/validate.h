// Argument checks shared by the collectives. Local: they look only at this rank's arguments.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "core/context.h"
#include "core/datatype.h"

namespace tucoll {

// `counts` must be non-null with n non-negative entries: MPI_ERR_ARG / MPI_ERR_COUNT.
int check_counts(const char *fn, const char *what, const int *counts, int n);

// `displs` must be non-null: MPI_ERR_ARG.
int check_displs(const char *fn, const char *what, const int *displs);

// A buffer holding data must not be NULL — unless its datatype addresses memory absolutely
// (MPI_BOTTOM with a non-zero true lower bound): MPI_ERR_BUFFER.
int check_buffer(const char *fn, const char *what, const void *buf, int64_t bytes, const TypeInfo &type);

// Sum of counts[i] * unit over n entries, in 64 bits.
int64_t total_bytes(const int *counts, int n, int64_t unit);

// MPI_ERR_ARG when two of the n blocks overlap: block i is counts[i] elements from element
// displs[i]. Empty blocks overlap nothing. `order` is scratch (sorted block indices).
int check_disjoint(const char *fn, const char *what, const int *counts, const int *displs, int n,
                   std::vector<int> &order);

// TUCOLL_CHECK=global: every rank learns whether any rank's arguments were rejected (one
// MPI_Allreduce), so an error on some ranks never leaves the others waiting in the exchange.
// Default (local): each rank returns its own verdict, as MPI does.
// Whether the environment asks for it (read by the context: Context::global_checks).
bool global_checks_requested();
int agree_on_error(Context &ctx, int local_rc, const char *fn);

// TUCOLL_CHECK=global, before any data moves: what every rank sends to every other against what
// that rank expects. `sent[j]` bytes go to rank j; `expected[i]` bytes are expected from rank i.
// One all-to-all of the sizes; MPI_ERR_TRUNCATE naming the first disagreement this rank sees.
int check_pairwise_bytes(Context &ctx, const int64_t *sent, const int64_t *expected);
// The same when every rank sends one block to all: `sent` bytes from this rank, `expected[i]`
// from rank i (one allgather).
int check_gathered_bytes(Context &ctx, int64_t sent, const int64_t *expected);

}  // namespace tucoll
