// Non-uniform all-to-all: what every algorithm receives, and the registry entry type.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <optional>
#include <string>

#include "core/context.h"
#include "core/registry.h"
#include "core/stats.h"
#include "core/task.h"

namespace tucoll::alltoallv {

// An MPI_Alltoall's own arguments, as given to tucoll_alltoall.
struct UniformArgs {
    const void *sendbuf;  // may be MPI_IN_PLACE
    int sendcount;
    MPI_Datatype sendtype;
    void *recvbuf;
    int recvcount;
    MPI_Datatype recvtype;
};

// The user's arguments, exactly as given to tucoll_alltoallv; or an MPI_Alltoall's, held in
// `alltoall` (for algorithms that call the MPI's MPI_Alltoall) and described by the fields
// above as the same exchange as an alltoallv (every count the same, block j at displacement j).
struct TypedArgs {
    const void *sendbuf;  // may be MPI_IN_PLACE
    const int *sendcounts;
    const int *sdispls;
    MPI_Datatype sendtype;
    void *recvbuf;
    const int *recvcounts;
    const int *rdispls;
    MPI_Datatype recvtype;
    MPI_Comm comm;
    std::optional<UniformArgs> alltoall = std::nullopt;

    bool is_alltoall() const { return alltoall.has_value(); }
};

// The byte view algorithms work on: block i of the send side is scounts[i] bytes at
// sbuf + sdispls[i]; block j of the receive side is rcounts[j] bytes at rbuf + rdispls[j].
// Offsets are 64-bit. Non-contiguous datatypes have been packed, MPI_IN_PLACE resolved.
struct Call {
    const TypedArgs &typed;
    const char *sbuf;
    const int64_t *scounts;
    const int64_t *sdispls;
    char *rbuf;
    const int64_t *rcounts;
    const int64_t *rdispls;
    // M, the largest block any rank sends, when the caller already reduced it (`auto` does);
    // -1 otherwise. Lets TuNA skip its own MPI_Allreduce.
    int64_t known_max_block = -1;
    // Every block is the same size at displacement j * size, on every rank: the call came through
    // tucoll_alltoall, so this is known without communication.
    bool uniform = false;
};

// An algorithm's schedule (core/task.h): rounds of messages, each awaited with
// `co_await ctx.requests().completion()`, so that the same code runs blocking and nonblocking.
using RunFn = Task (*)(Context &ctx, const Call &call, const Params &params, CallStats &stats);

// A meta-algorithm that times the runs it chooses (auto's online tuning).
struct Probe {
    virtual ~Probe() = default;
    virtual void cancel() = 0;  // the choice will not run (a persistent request's init)
};

// What a meta-algorithm decided: the entry to run, M when it was reduced on the way, and a note
// for the statistics' path. A decision the meta-algorithm keeps from call to call (auto's entry
// of one spec) is pointed to rather than copied: a call that needs no communication should
// cost no allocation either.
struct Choice {
    Selection selection;
    int64_t known_max_block = -1;
    std::string note;
    const Selection *kept_selection = nullptr;  // when set, used instead of `selection`
    const std::string *kept_note = nullptr;     // when set, used instead of `note`
    // When set, the chosen run is timed: this rank's time goes to *timing, a slot of its own
    // (nonblocking calls explore side by side).
    Probe *probe = nullptr;
    double *timing = nullptr;

    const Selection &selected() const { return kept_selection ? *kept_selection : selection; }
    // Ready for the next decision (keeping the strings' storage).
    void reset() {
        known_max_block = -1;
        note.clear();
        kept_selection = nullptr;
        kept_note = nullptr;
        probe = nullptr;
        timing = nullptr;
    }
    const std::string &path() const { return kept_note ? *kept_note : note; }
};

// A meta-algorithm (`auto`) chooses another entry at run time, identically on every rank;
// `type_size` is the size of the datatype the send counts are in. A Task, as a schedule's step:
// what it reduces to decide is awaited in a nonblocking call, whose start stays local.
using ChooseFn = Task (*)(Context &ctx, const TypedArgs &args, int64_t type_size, Choice *out);

struct Algorithm : AlgorithmInfo {
    RunFn run = nullptr;
    ChooseFn choose = nullptr;  // set for meta-algorithms, which have no run function
    bool typed = false;         // runs on the user's typed arguments; no byte view is built
};

const Registry<Algorithm> &registry();
// The MPI_Alltoall registry: every alltoallv algorithm on uniform counts, its `vendor` calling the
// MPI's MPI_Alltoall (src/alltoall).
const Registry<Algorithm> &alltoall_registry();

// M, the largest block any rank sends (TuNA's T, auto's size feature): this rank's largest, in
// bytes, from its typed arguments (the receive side's in place) or from the byte view; and the
// maximum over the communicator's ranks, one MPI_Allreduce on its private communicator.
int64_t largest_send_block(const TypedArgs &args, int p, int64_t type_size);
int64_t largest_send_block(const Call &call, int p);
int reduce_max_block(Context &ctx, int64_t mine, int64_t *m);

// Runs a call through the common driver (core/driver.h): alltoallv, or alltoall when
// args.is_alltoall(); blocking, or started as a nonblocking call completed by *request.
int run(const char *spec, const TypedArgs &args);
int start_nonblocking(const char *spec, const TypedArgs &args, tucoll_plan **request);
// A persistent alltoallv, or alltoall when args.is_alltoall() (collective; its starts are local).
int init_persistent(const char *spec, const TypedArgs &args, tucoll_plan **request);

// One function per algorithm file, returning its registry entry.
Algorithm vendor_algorithm();
Algorithm linear_algorithm();
Algorithm pairwise_algorithm();
Algorithm spreadout_algorithm();
Algorithm scattered_algorithm();
Algorithm xor_algorithm();
Algorithm bruck2_algorithm();
Algorithm tuna_algorithm();
Algorithm tuna_coalesced_algorithm();
Algorithm tuna_staggered_algorithm();
Algorithm ipc_algorithm();
Algorithm staged_algorithm();
Algorithm auto_algorithm();

}  // namespace tucoll::alltoallv
