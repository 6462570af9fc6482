#include "alltoallv/auto_online.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "core/errors.h"
#include "core/tuning.h"

namespace tucoll::alltoallv {
namespace {

std::string class_range(int k) {
    if (k == 0) return "empty blocks";
    char text[64];
    std::snprintf(text, sizeof text, "largest block in [%.0f, %.0f) B", std::ldexp(1.0, k - 1), std::ldexp(1.0, k));
    return text;
}

// A candidate's time: the least of its rounds after the first. Noise (other processes, an
// oversubscribed node) only ever adds time, so the least sample is the steadiest estimate of
// what the algorithm itself costs; each sample is already the slowest rank's.
double best_of_rounds(const std::vector<double> &seconds, int candidate, int n) {
    double best = seconds[static_cast<size_t>(n + candidate)];
    for (int r = 2; r < OnlineTuner::kRounds; ++r) best = std::min(best, seconds[static_cast<size_t>(r * n + candidate)]);
    return best;
}

}  // namespace

namespace {

// The table at `path` (a new online table where there is none or the file is empty) with `spec` for (nprocs, ppn,
// size_class) recorded; MPI_ERR_ARG (and a reason) when the file holds something else.
int recorded_table(const char *path, int nprocs, int ppn, int size_class, const std::string &spec,
                   std::shared_ptr<TuningTable> *table) {
    std::stringstream text;
    if (std::ifstream in(path); in) text << in.rdbuf();
    if (text.str().find_first_not_of(" \t\r\n") == std::string::npos) {  // none yet, or an empty file
        *table = TuningTable::online("alltoallv");
    } else {
        TUCOLL_TRY(TuningTable::parse(text.str(), path, "alltoallv", table));
    }
    return (*table)->record_choice(nprocs, ppn, size_class, spec);
}

}  // namespace

void save_online_choice(int nprocs, int ppn, int size_class, const std::string &spec) {
    const char *path = std::getenv("TUCOLL_TUNING_SAVE");
    if (path == nullptr || *path == '\0') return;
    static std::mutex mutex;  // threads of one process; the file lock below serves processes
    const std::lock_guard<std::mutex> guard(mutex);
    const std::string lock_path = std::string(path) + ".lock";
    const int lock = open(lock_path.c_str(), O_CREAT | O_RDWR, 0644);
    if (lock < 0 || flock(lock, LOCK_EX) != 0) {
        if (lock >= 0) close(lock);
        if (verbose()) log_line("TUCOLL_TUNING_SAVE: cannot lock " + lock_path);
        return;
    }
    std::string why;
    std::shared_ptr<TuningTable> table;
    if (recorded_table(path, nprocs, ppn, size_class, spec, &table) != MPI_SUCCESS) {
        why = last_message(MPI_ERR_ARG) + "; it is left as it is";
    } else {
        const std::string temp = std::string(path) + ".tmp." + std::to_string(getpid());
        std::ofstream out(temp);
        out << table->to_json();
        out.close();
        if (!out || std::rename(temp.c_str(), path) != 0) {
            std::remove(temp.c_str());
            why = "cannot be written";
        }
    }
    if (!why.empty() && verbose()) log_line(std::string("TUCOLL_TUNING_SAVE: ") + path + " " + why);
    flock(lock, LOCK_UN);
    close(lock);
}

int auto_mode(AutoMode *out) {
    const char *text = std::getenv("TUCOLL_AUTO");
    if (text == nullptr || *text == '\0') {
        *out = AutoMode::kDefault;
    } else if (std::strcmp(text, "table") == 0) {
        *out = AutoMode::kTable;
    } else if (std::strcmp(text, "online") == 0) {
        *out = AutoMode::kOnline;
    } else {
        return failf(MPI_ERR_ARG, "TUCOLL_AUTO=%s: expected table or online (or unset)", text);
    }
    return MPI_SUCCESS;
}

const std::vector<Selection> &OnlineTuner::candidates(Context &ctx) {
    if (built_) return candidates_;
    // The baselines, the two classic direct exchanges, the batched one, and TuNA at the two ends
    // of its radix range that matter (2: fewest bytes per round count, ~sqrt P: few rounds);
    // across nodes, the coalesced hierarchical TuNA too.
    const Scope scope = ctx.scope();
    std::vector<std::string> specs = {"vendor", "spreadout", "pairwise", "scattered", "tuna:radix=2"};
    const int sqrt_p = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(scope.nprocs))));
    if (sqrt_p > 2) specs.push_back("tuna:radix=" + std::to_string(sqrt_p));
    if (ctx.topology().num_nodes > 1) specs.push_back("tuna_coalesced");
    for (const std::string &spec : specs) {
        Selection sel;
        if (resolve_spec(registry(), spec.c_str(), scope, &sel) != MPI_SUCCESS) continue;  // not at this P
        const bool seen = std::any_of(candidates_.begin(), candidates_.end(),
                                      [&](const Selection &c) { return c.spec == sel.spec; });
        if (!seen) candidates_.push_back(std::move(sel));
    }
    built_ = true;
    return candidates_;
}

LateClasses::~LateClasses() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && request_ != MPI_REQUEST_NULL) MPI_Wait(&request_, MPI_STATUS_IGNORE);
}

void LateClasses::learn(int k) {
    if (last_ >= 0) next_[last_] = k;
    last_ = k;
}

int LateClasses::predict() const {
    if (last_ < 0 || quiet_ > 0) return -1;
    // Follow the successors from the latest agreed call to this one; a class never followed by
    // anything is taken to repeat.
    int k = last_;
    for (long long step = 0; step <= unknown_; ++step) {
        auto it = next_.find(k);
        if (it == next_.end() || it->second == k) break;  // repeats from here on
        k = it->second;
    }
    return k;
}

void LateClasses::check(const std::vector<int> &predicted, const double *agreed) {
    for (size_t i = 0; i < predicted.size(); ++i) {
        const int k = OnlineTuner::size_class(agreed[i]);
        if (k != predicted[i]) quiet_ = kQuietCalls;
        learn(k);
        --unknown_;
    }
}

int LateClasses::complete_in_flight() {
    if (request_ == MPI_REQUEST_NULL) return MPI_SUCCESS;
    TUCOLL_MPI(MPI_Wait(&request_, MPI_STATUS_IGNORE));
    check(sent_predicted_, agreed_.data());
    sent_predicted_.clear();
    return MPI_SUCCESS;
}

int LateClasses::record_predicted(MPI_Comm comm, int predicted, double local_max) {
    // The window sent by the previous call is complete by now, or nearly: the exchange in
    // between progressed it. Finished here rather than left in flight, because an open
    // nonblocking collective makes the MPI library poll it in every call of the exchanges that
    // follow (Open MPI's libnbc: about 0.1 us per call, times the messages of each exchange).
    TUCOLL_TRY(complete_in_flight());
    window_.push_back(local_max);
    window_predicted_.push_back(predicted);
    ++unknown_;
    if (static_cast<int>(window_.size()) < kWindow) return MPI_SUCCESS;
    sent_.swap(window_);
    sent_predicted_.swap(window_predicted_);
    window_.clear();
    window_predicted_.clear();
    agreed_.resize(sent_.size());
    TUCOLL_MPI(MPI_Iallreduce(sent_.data(), agreed_.data(), static_cast<int>(sent_.size()), MPI_DOUBLE, MPI_MAX, comm,
                              &request_));
    return MPI_SUCCESS;
}

int LateClasses::agree_now(MPI_Comm comm, double local_max, double *global_max) {
    if (quiet_ > 0) --quiet_;
    TUCOLL_TRY(complete_in_flight());  // in call order: the window in flight first
    std::vector<double> values(window_);
    values.push_back(local_max);
    TUCOLL_MPI(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_DOUBLE, MPI_MAX, comm));
    check(window_predicted_, values.data());  // the unsent window's calls, then this one
    window_.clear();
    window_predicted_.clear();
    *global_max = values.back();
    learn(OnlineTuner::size_class(*global_max));
    return MPI_SUCCESS;
}

int OnlineTuner::size_class(double max_block) {
    return max_block < 1 ? 0 : 1 + static_cast<int>(std::floor(std::log2(max_block)));
}

const Selection *OnlineTuner::settled(int k) const {
    auto it = classes_.find(k);
    return it == classes_.end() || it->second.settled < 0 ? nullptr : &candidates_[it->second.settled];
}

void OnlineTuner::choose_predicted(int k, Choice *out) {
    SizeClass &c = classes_.at(k);
    // The marker first: tucoll_stats_t's path holds 96 characters.
    if (c.predicted_note.empty()) {
        c.predicted_note = "auto online: " + candidates_[c.settled].spec + " (class agreed later) for " + class_range(k);
    }
    out->kept_selection = &candidates_[c.settled];
    out->kept_note = &c.predicted_note;
}

void OnlineTuner::cancel() {
    if (last_handed_out_ != nullptr) --last_handed_out_->calls;
    last_handed_out_ = nullptr;
}

int OnlineTuner::choose(Context &ctx, double max_block, bool uniform, Choice *out) {
    const std::vector<Selection> &cands = candidates(ctx);
    const int n = static_cast<int>(cands.size());
    const int k = size_class(max_block);
    SizeClass &c = classes_[uniform ? -1 - k : k];
    const int exploration = n * kRounds;
    if (c.settled < 0 && c.calls < exploration) {
        // Round-robin, so that every candidate meets the same conditions over the rounds.
        c.seconds.resize(static_cast<size_t>(exploration), 0.0);
        const int slot = c.calls++;
        out->kept_selection = &cands[slot % n];
        out->probe = this;
        out->timing = &c.seconds[static_cast<size_t>(slot)];  // sized once: the slot stays put
        last_handed_out_ = &c;
        char note[160];
        std::snprintf(note, sizeof note, "auto online: exploring, call %d of %d for %s", slot + 1, exploration,
                      class_range(k).c_str());
        out->note = note;
        return MPI_SUCCESS;
    }
    if (c.settled < 0) {
        // Every exploration call's time as the slowest rank saw it: the same numbers on every
        // rank, so the same choice.
        ctx.quiesce();
        TUCOLL_MPI(MPI_Allreduce(MPI_IN_PLACE, c.seconds.data(), exploration, MPI_DOUBLE, MPI_MAX, ctx.comm()));
        int best = 0;
        std::string all;
        for (int i = 0; i < n; ++i) {
            const double t = best_of_rounds(c.seconds, i, n);
            if (t < best_of_rounds(c.seconds, best, n)) best = i;
            char item[96];
            std::snprintf(item, sizeof item, "%s%s %.2f us", i ? ", " : "", cands[i].spec.c_str(), t * 1e6);
            all += item;
        }
        c.settled = best;
        c.note = "auto online: " + cands[best].spec + " for " + class_range(k) + ", chosen after " +
                 std::to_string(exploration) + " calls";
        // The saved table is the alltoallv one; MPI_Alltoall's choices stay with this run.
        if (ctx.rank() == 0 && !uniform) save_online_choice(ctx.size(), ctx.topology().max_local_size, k, cands[best].spec);
        if (ctx.rank() == 0 && verbose()) {
            log_line("auto online on a communicator of " + std::to_string(ctx.size()) + " ranks, " + class_range(k) +
                     ": " + cands[best].spec + " (least of the slowest rank's times over rounds 2-" +
                     std::to_string(kRounds) + ": " + all + ")");
        }
    }
    out->kept_selection = &cands[c.settled];
    out->kept_note = &c.note;
    return MPI_SUCCESS;
}

}  // namespace tucoll::alltoallv
