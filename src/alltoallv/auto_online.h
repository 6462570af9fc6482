// auto's online tuning: on a communicator whose shape the tuning table does not cover (or when
// TUCOLL_AUTO=online asks for it), auto times a few candidates from the registry on the first
// calls of each block-size class, agrees on the fastest in one reduction, and runs it from then
// on — the same choice on every rank.
#pragma once

#include <mpi.h>

#include <map>
#include <string>
#include <vector>

#include "alltoallv/alltoallv.h"

namespace tucoll::alltoallv {

// TUCOLL_AUTO: "table" (the table's choice only), "online" (tune online always), or unset / ""
// (tune online where the table has no entry near this communicator's shape). MPI_ERR_ARG with a
// message for anything else.
enum class AutoMode { kDefault, kTable, kOnline };
int auto_mode(AutoMode *out);

// TUCOLL_TUNING_SAVE=PATH: every settled choice (P, Q, size class, spec) is merged into the
// tuning table at PATH (features ["max_block"], one entry per shape, "source": "online"), which
// `tucoll table --merge` folds into a swept table. Written by the communicator's rank 0, under
// a lock and by rename, so that processes and communicators saving to one file keep each
// other's entries. A file that cannot be read as such a table, locked or written is left as it
// is and logged under TUCOLL_VERBOSE; the call itself does not fail.
void save_online_choice(int nprocs, int ppn, int size_class, const std::string &spec);

class OnlineTuner final : public Probe {
  public:
    // Each candidate runs this many times per class, interleaved with the others; the first
    // round (allocations, first touch) is left out of the comparison.
    static constexpr int kRounds = 4;

    // The choice for a call whose largest block anywhere is `max_block` bytes (identical on every
    // rank): a candidate being explored, with this tuner as its probe, or the class's settled
    // choice. MPI_Alltoall calls (`uniform`) are tuned apart from MPI_Alltoallv ones (their
    // vendor differs). Collective once per class, when exploration ends (one MPI_Allreduce).
    int choose(Context &ctx, double max_block, bool uniform, Choice *out);
    // Gives back the exploration call the last choose() handed out, unrun (a persistent request
    // made while exploring does not keep a candidate; it asks again at each start).
    void cancel() override;

    // The candidates at this communicator's scope (for tests and documentation).
    const std::vector<Selection> &candidates(Context &ctx);

    // Size classes are octaves of the largest block: [2^(k-1), 2^k) bytes is class k, empty is 0.
    static int size_class(double max_block);
    // The settled choice of MPI_Alltoallv class `k`, or null while it is explored (or unseen).
    const Selection *settled(int k) const;
    // The settled choice of class `k` for a call whose class was predicted, not agreed (see
    // LateClasses below).
    void choose_predicted(int k, Choice *out);

  private:
    struct SizeClass {
        std::vector<double> seconds;  // per exploration call, this rank's, then the slowest rank's
        int calls = 0;
        int settled = -1;  // index into candidates_, once chosen
        std::string note;
        std::string predicted_note;  // the note of a call whose class was predicted
    };

    std::vector<Selection> candidates_;
    bool built_ = false;
    std::map<int, SizeClass> classes_;
    SizeClass *last_handed_out_ = nullptr;  // the class of choose()'s last exploration call (cancel)
};

// Online tuning's steady state without a blocking reduction (see auto.cpp). Once a call's
// predicted size class has settled on an algorithm that needs no M, the call runs that choice at
// once and only records its own largest block; every kWindow such calls, one nonblocking
// MPI_Iallreduce of the window's kWindow values agrees on their classes, completed at the next
// call (the exchange in between progressed it). Predictions rest only on agreed classes, so every
// rank makes the same one: the class reached from the latest agreed class by following, call by
// call, the class that followed each class the last time it occurred (repeated sizes, and sizes
// that alternate or cycle, predict right). A wrong prediction costs that call a choice made for
// another class — any algorithm gives the right result — and is seen when its window is agreed
// (within kWindow + 1 calls); the next kQuietCalls calls then agree on their class at once.
class LateClasses {
  public:
    static constexpr int kWindow = 32;
    static constexpr int kQuietCalls = 8;

    LateClasses() = default;
    LateClasses(const LateClasses &) = delete;
    LateClasses &operator=(const LateClasses &) = delete;
    // Released with the context, in a collective (MPI_Comm_free, MPI_Finalize, or
    // tucoll_comm_release_scratch), so every rank completes the reduction in flight.
    ~LateClasses();

    // The class predicted for the next call, or -1 (nothing agreed yet, or just mispredicted).
    int predict() const;
    // The next call runs with `predicted`; this rank's largest block is `local_max`.
    int record_predicted(MPI_Comm comm, int predicted, double local_max);
    // The next call agrees on its class at once: one MPI_Allreduce (MAX) of the unsent window and
    // this call's largest block, which comes back through *global_max.
    int agree_now(MPI_Comm comm, double local_max, double *global_max);
    // The first call's class, agreed by the caller.
    void learn_first(double global_max) { learn(OnlineTuner::size_class(global_max)); }

  private:
    void learn(int k);
    int complete_in_flight();
    void check(const std::vector<int> &predicted, const double *agreed);

    std::vector<double> window_;        // this rank's largest block of each predicted call not yet sent
    std::vector<int> window_predicted_;
    std::vector<double> sent_, agreed_;  // the window in flight: this rank's, everyone's
    std::vector<int> sent_predicted_;
    MPI_Request request_ = MPI_REQUEST_NULL;
    int last_ = -1;           // the class of the latest call whose class is agreed
    long long unknown_ = 0;   // calls made since that one
    std::map<int, int> next_;  // class -> the class that followed it last
    int quiet_ = 0;           // calls left that agree on their class at once
};

}  // namespace tucoll::alltoallv
