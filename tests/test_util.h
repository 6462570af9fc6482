// Helpers for MPI tests: verdicts agreed over ranks, and the parameter variants of a registry.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/registry.h"
#include "tucoll.h"
#include "typed_buffers.h"

namespace tucoll::test {

inline int world_rank() {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

inline int world_size() {
    int p = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    return p;
}

// A 2 x 2 transpose of ints (committed; the caller frees it): an int resized to 8 bytes, repeated
// twice (ints at 0 and 8), that resized to 4 bytes and repeated twice (ints at 0, 8, 4, 12), then
// resized to 16 bytes. Its size, extent and true extent agree, yet its copies interleave: built
// from order-keeping constructors alone, its data do not lie in type-map order.
inline MPI_Datatype interleaved_transpose() {
    MPI_Datatype spaced, column, narrowed, both, transpose;
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &spaced);
    MPI_Type_contiguous(2, spaced, &column);
    MPI_Type_create_resized(column, 0, sizeof(int), &narrowed);
    MPI_Type_contiguous(2, narrowed, &both);
    MPI_Type_create_resized(both, 0, 4 * sizeof(int), &transpose);
    MPI_Type_commit(&transpose);
    for (MPI_Datatype *t : {&spaced, &column, &narrowed, &both}) MPI_Type_free(t);  // kept alive by `transpose`
    return transpose;
}

// True on every rank iff `local` holds on every rank of `comm`. Tests assert on this, after all
// collective calls, so that a failure on one rank never leaves the others waiting.
inline bool all_ranks(bool local, MPI_Comm comm = MPI_COMM_WORLD) {
    int in = local ? 1 : 0, out = 0;
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LAND, comm);
    return out != 0;
}

// A set-up step's verdict agreed over `comm`: true on every rank iff `err` is empty on every rank.
// Otherwise every rank records a failure naming the lowest failing rank and its reason. Tests call
// it after building their inputs and before the first collective that uses them, so that one
// rank's unreadable file or bad workload fails the test everywhere, with the reason, instead of
// sending the other ranks into a collective with arguments that do not match.
bool setup_agreed(const std::string &err, MPI_Comm comm = MPI_COMM_WORLD);

// In a void test body: ends the test on every rank when the set-up step `err` failed on any rank.
#define TUCOLL_ASSERT_SETUP(err)                                   \
    do {                                                           \
        if (!::tucoll::test::setup_agreed(err)) return;            \
    } while (0)

// Every rank sends `n` ints to every rank (rank me's block for j holds me * 1000000 + its index)
// through tucoll_alltoallv_with(spec) on `comm`; true on every rank iff every result is right.
bool uniform_int_alltoallv(const std::string &spec, int n, MPI_Comm comm);

// A duplicate of MPI_COMM_WORLD with tucoll's context made (that is collective) and no
// nonblocking call made on it yet: its pool of requests is empty.
MPI_Comm fresh_communicator();

// Runs `start` on every rank, on rank 1 only once rank 0's has returned: a start that waited for
// the other ranks would never return. Returns start's result.
template <class Start>
int start_before_rank_1_starts(Start start) {
    int token = 0;
    if (world_rank() == 1) MPI_Recv(&token, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    const int rc = start();
    if (world_rank() == 0) MPI_Send(&token, 1, MPI_INT, 1, 99, MPI_COMM_WORLD);
    return rc;
}

// A duplicate of MPI_COMM_WORLD declaring q ranks per node (0: as detected), made once per q.
MPI_Comm comm_with_ppn(int q);

// What MPI_Alltoallv must leave in `mine.recv` on rank `me`, computed locally from its
// definition: every rank's send buffer rebuilt from the workload, its block for `me` packed with
// the send type and unpacked with the receive type at rdispls — independent of any MPI's
// MPI_Alltoallv, so that the vendor itself is checked too.
bench::Bytes reference_alltoallv(const bench::Workload &w, const bench::TypePair &t, int me, bench::Layout layout,
                                 const bench::AlltoallvBuffers &mine);

// Runs `spec` — and the vendor's MPI_Alltoallv — on a workload over `comm` and compares both with
// the reference; true on every rank iff everything matched. `stats`: what the tucoll call did.
bool alltoallv_matches(const std::string &spec, MPI_Comm comm, const std::string &dist, const std::string &type,
                       bench::Layout layout, int64_t max_block, uint64_t seed = 7, tucoll_stats_t *stats = nullptr);

// An alltoallv workload's buffers, in a pair of datatypes.
struct TypedExchange {
    bench::TypePair types;
    bench::AlltoallvBuffers buffers;
};
// `out` for this rank: the distribution `dist` of blocks up to `max_block` (seeded) over the
// world, in datatypes `type`, scattered layout. An error message, or empty.
std::string build_exchange(const std::string &dist, const std::string &type, int64_t max_block, uint64_t seed,
                           TypedExchange *out);
// The MPI library's MPI_Alltoallv of `x`'s current contents on MPI_COMM_WORLD; the receive
// buffer is left refilled with its sentinel, ready for tucoll's call.
bench::Bytes vendor_alltoallv(TypedExchange &x);

// Spec strings covering every algorithm of `registry` at `scope`: each with defaults, and each
// parameter in turn at its edges and a few values between (others at their defaults). Values
// above an unbounded maximum's practical range (P, P+1) are included to exercise clamping.
inline std::vector<std::string> spec_variants(const RegistryBase &registry, const Scope &scope) {
    std::vector<std::string> specs;
    for (size_t i = 0; i < registry.size(); ++i) {
        const AlgorithmInfo &alg = registry.info(i);
        specs.push_back(alg.name);
        for (const ParamSpec &p : alg.params) {
            const long lo = p.min.eval(scope);
            const long hi = p.max.is_unbounded() ? scope.nprocs + 1 : std::max(lo, p.max.eval(scope));
            std::vector<long> values = {lo, lo + 1, lo + 2, (lo + hi) / 2, hi - 1, hi};
            std::sort(values.begin(), values.end());
            values.erase(std::unique(values.begin(), values.end()), values.end());
            for (long v : values) {
                if (v < lo || v > hi || v == p.default_value) continue;
                specs.push_back(alg.name + ":" + p.name + "=" + std::to_string(v));
            }
        }
    }
    return specs;
}

// The distributions and datatype pairs the correctness matrices cover: everything by default;
// TUCOLL_TEST_MATRIX=quick keeps three of each (for MPIs whose ranks busy-poll, where
// oversubscription makes every call slow).
inline bool quick_matrix() {
    const char *m = std::getenv("TUCOLL_TEST_MATRIX");
    return m != nullptr && std::string(m) == "quick";
}

inline std::vector<std::string> test_distributions() {
    if (quick_matrix()) return {"uniform", "zeros", "onehuge"};
    return {"uniform", "zeros", "onehot", "onehuge", "powerlaw", "normal", "fft1", "fft2"};
}

inline std::vector<std::string> test_types() {
    if (quick_matrix()) return {"char", "vector", "int-permuted"};
    return bench::type_pair_names();
}

// A gtest-safe name for a spec or distribution ("scattered:block_count=3" -> "scattered_block_count_3").
inline std::string sanitize(std::string s) {
    for (char &c : s) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    }
    return s;
}

// Sets an environment variable for one scope on every rank of `comm` (collective), and makes
// tucoll read it: a communicator's settings (TUCOLL_CHECK, TUCOLL_<COLLECTIVE>, auto's table) are
// read at its first use and again at tucoll_comm_release_scratch, not at every call.
class ScopedEnv {
  public:
    ScopedEnv(const char *name, const std::string &value, MPI_Comm comm = MPI_COMM_WORLD) : name_(name), comm_(comm) {
        const char *old = std::getenv(name);
        had_ = old != nullptr;
        if (had_) old_ = old;
        setenv(name, value.c_str(), 1);
        tucoll_comm_release_scratch(comm_);
    }
    ~ScopedEnv() {
        if (had_) setenv(name_, old_.c_str(), 1);
        else unsetenv(name_);
        tucoll_comm_release_scratch(comm_);
    }
    ScopedEnv(const ScopedEnv &) = delete;
    ScopedEnv &operator=(const ScopedEnv &) = delete;

  private:
    const char *name_;
    MPI_Comm comm_;
    bool had_ = false;
    std::string old_;
};

}  // namespace tucoll::test
