#include "alltoallv/tuna_engine.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include "core/copy.h"
#include "core/errors.h"
#include "core/p2p.h"

namespace tucoll::alltoallv {
namespace {

// The schedules of the last shapes (ring size, radix) run in this process, shared by its
// communicators and their operations, so that calls that alternate between shapes (auto's
// choices, the node ring of the hierarchical variants and flat TuNA's) build none again. A
// schedule holds 2n bytes and depends on nothing else; under SimGrid every simulated rank shares
// it. Asked only when an operation's shape changes; a mutex, since operations of different
// communicators may run in different threads.
class Schedules {
  public:
    static std::shared_ptr<const RadixSchedule> get(int n, int radix) {
        static Schedules instance;
        std::lock_guard<std::mutex> lock(instance.mutex_);
        return instance.find_or_build(n, radix);
    }

  private:
    static constexpr size_t kKept = 8;
    std::mutex mutex_;
    std::vector<std::shared_ptr<const RadixSchedule>> kept_;  // the most recently used last

    std::shared_ptr<const RadixSchedule> find_or_build(int n, int radix) {
        for (auto it = kept_.begin(); it != kept_.end(); ++it) {
            if ((*it)->ring_size() == n && (*it)->radix() == radix) {
                std::rotate(it, it + 1, kept_.end());
                return kept_.back();
            }
        }
        if (kept_.size() == kKept) kept_.erase(kept_.begin());  // an operation using it keeps its own
        kept_.reserve(kKept);
        kept_.push_back(std::make_shared<const RadixSchedule>(n, radix));
        return kept_.back();
    }
};

// What the engine reuses from call to call on a communicator (no allocation in steady state).
struct EngineWorkspace {
    std::shared_ptr<const RadixSchedule> schedule;  // this operation's, held while it runs
    ScratchBuffer temp;               // T
    std::vector<int> where;           // per slot: its position in T, or -1 while it holds none
    std::vector<int> free_positions;  // positions of T holding nothing, as a stack
    std::vector<int64_t> held;        // per (position, group): bytes of the block held there
    std::vector<int> slots, staying;  // this round's slots; the position each incoming block takes
    std::vector<int64_t> out_bytes, in_bytes, meta_out, meta_in;
    BlockList out, in;
    std::vector<BlockList> lists;     // direct-only rounds

    const RadixSchedule &schedule_for(int n, int radix) {
        if (!schedule || schedule->ring_size() != n || schedule->radix() != radix) {
            schedule = Schedules::get(n, radix);
        }
        return *schedule;
    }
};

// T positions a configuration provides on a ring of n ranks.
int temp_positions(const RadixSchedule &schedule, const TunaConfig &config) {
    if (schedule.ring_size() <= 1) return 0;
    return config.tight_temp ? schedule.peak_positions() : std::max(schedule.ring_size() - 1, schedule.peak_positions());
}

// State of one call: T, which slot holds which position, and the per-round lists.
class Rounds {
  public:
    Rounds(Context &ctx, const TunaLayout &layout, const TunaConfig &config, CallStats &stats)
        : ctx_(ctx), reqs_(ctx.requests()), layout_(layout), config_(config), stats_(stats),
          ws_(ctx.workspace<EngineWorkspace>()), schedule_(ws_.schedule_for(layout.ring_size(), config.radix)),
          n_(layout.ring_size()), me_(layout.ring_index()), groups_(layout.groups()), block_(config.max_block) {}

    // The rounds, in the order run_tuna_rounds takes them.
    void copy_slot_zero();
    bool direct_only() const;
    void post_direct_only();
    void direct_only_arrived();
    void allocate_temp();
    // A round: its slots, the sizes the receiver cannot know (posted when there are any, read
    // once they arrived), the data, and where each block now is.
    void begin_round(const RadixSchedule::Round &round);
    bool post_sizes(const RadixSchedule::Round &round);
    void read_sizes(const RadixSchedule::Round &round);
    void post_data(const RadixSchedule::Round &round);
    void end_round(const RadixSchedule::Round &round);
    void finish();

    const RadixSchedule &schedule() const { return schedule_; }
    Requests &requests() { return reqs_; }
    int ring_size() const { return n_; }

  private:
    char *temp(int position, int group) const {
        TUCOLL_ASSERT(position >= 0 && position < positions_ && group >= 0 && group < groups_);
        return temp_ == nullptr ? nullptr : temp_ + (static_cast<int64_t>(position) * groups_ + group) * block_;
    }
    int64_t &held(int position, int group) {
        TUCOLL_ASSERT(position >= 0 && position < positions_);
        return ws_.held[static_cast<size_t>(position) * groups_ + group];
    }
    bool first_hop(int slot, const RadixSchedule::Round &round) const { return schedule_.lowest_digit(slot) == round.x; }
    bool last_hop(int slot, const RadixSchedule::Round &round) const { return schedule_.highest_digit(slot) == round.x; }

    Context &ctx_;
    Requests &reqs_;
    const TunaLayout &layout_;
    const TunaConfig &config_;
    CallStats &stats_;
    EngineWorkspace &ws_;
    const RadixSchedule &schedule_;
    const int n_, me_, groups_;
    const int64_t block_;
    char *temp_ = nullptr;
    int positions_ = 0;  // T's capacity, in positions of groups_ blocks of M bytes
    int in_use_ = 0, peak_ = 0;
    int send_peer_ = 0, recv_peer_ = 0;  // this round's partners
};

void Rounds::copy_slot_zero() {
    for (int g = 0; g < groups_; ++g) {
        int64_t bytes = 0;
        const char *src = layout_.source(0, g, &bytes);
        char *dst = layout_.destination(0, g, bytes);
        if (dst != nullptr) local_copy(dst, src, bytes);  // nullptr: no room, an error recorded
        layout_.arrived(0, g, bytes);
    }
}

// Every slot direct and every size known: the rounds do not depend on each other, and all of
// them are posted at once — the spread-out exchange, with no temporary buffer.
bool Rounds::direct_only() const {
    if (temp_positions(schedule_, config_) > 0 || config_.metadata_every_round || !config_.tight_temp) return false;
    for (const auto &round : schedule_.rounds()) {
        for (int g = 0; g < groups_; ++g) {
            if (layout_.destination_bytes(static_cast<int>(round.distance), g) < 0) return false;
        }
    }
    return true;
}

void Rounds::post_direct_only() {
    std::vector<BlockList> &lists = ws_.lists;
    if (lists.size() < 2 * schedule_.rounds().size()) lists.resize(2 * schedule_.rounds().size());
    size_t k = 0;
    for (const auto &round : schedule_.rounds()) {
        const int slot = static_cast<int>(round.distance);
        BlockList &in = lists[k++];
        in.clear();
        for (int g = 0; g < groups_; ++g) {
            const int64_t bytes = layout_.destination_bytes(slot, g);
            in.add(layout_.destination(slot, g, bytes), bytes);
        }
        reqs_.recv(in, layout_.ring_rank((me_ - slot % n_ + n_) % n_), kTagData, ctx_.comm());
    }
    for (const auto &round : schedule_.rounds()) {
        const int slot = static_cast<int>(round.distance);
        BlockList &out = lists[k++];
        out.clear();
        for (int g = 0; g < groups_; ++g) {
            int64_t bytes = 0;
            const char *src = layout_.source(slot, g, &bytes);
            out.add(src, bytes);
        }
        if (!out.empty()) stats_.count_send(out.bytes());
        reqs_.send(out, layout_.ring_rank((me_ + slot) % n_), kTagData, ctx_.comm());
    }
}

void Rounds::direct_only_arrived() {
    for (const auto &round : schedule_.rounds()) {
        const int slot = static_cast<int>(round.distance);
        for (int g = 0; g < groups_; ++g) layout_.arrived(slot, g, layout_.destination_bytes(slot, g));
    }
}

// T and its bookkeeping: every position free, no slot holding one. Without memory for T the
// rank records the error and runs the rounds without it (its blocks go out empty).
void Rounds::allocate_temp() {
    positions_ = temp_positions(schedule_, config_);
    const int64_t bytes = static_cast<int64_t>(positions_) * groups_ * block_;
    temp_ = ws_.temp.get(static_cast<size_t>(bytes));
    if (temp_ == nullptr && bytes > 0) {
        reqs_.fault(failf(MPI_ERR_NO_MEM, "cannot allocate the temporary buffer (%lld bytes)", static_cast<long long>(bytes)));
    }
    ws_.where.assign(static_cast<size_t>(n_), -1);
    ws_.free_positions.resize(static_cast<size_t>(positions_));
    for (int i = 0; i < positions_; ++i) ws_.free_positions[i] = positions_ - 1 - i;
    ws_.held.assign(static_cast<size_t>(positions_) * groups_, 0);
}

// T's bookkeeping after the last round, and the statistics of T.
void Rounds::finish() {
    // T is sized by the schedule's peak, which the rounds just reached (never more: the free list
    // would have run dry).
    TUCOLL_ASSERT(peak_ <= positions_ && (!config_.tight_temp || peak_ == positions_));
    const int64_t position_bytes = static_cast<int64_t>(groups_) * block_;
    stats_.scratch_bytes += positions_ * position_bytes;
    // What T holds beyond the paper's B blocks: pass-through blocks arriving while their
    // predecessors are still being sent.
    stats_.staging_bytes += std::max(0, positions_ - (n_ - 1 - schedule_.num_rounds())) * position_bytes;
}

void Rounds::begin_round(const RadixSchedule::Round &round) {
    const int64_t d = round.distance;
    send_peer_ = layout_.ring_rank(static_cast<int>((me_ + d) % n_));
    recv_peer_ = layout_.ring_rank(static_cast<int>((me_ - d + n_) % n_));
    schedule_.slots_of(round, &ws_.slots);
    const size_t items = ws_.slots.size() * groups_;
    ws_.out_bytes.assign(items, 0);
    ws_.in_bytes.assign(items, 0);
}

// Phase 1 of a round: the sizes the receiver cannot know (blocks not yet at their destination,
// or whose destination size is not local), in slot then group order. An announced size that does
// not fit its place is an error; the block is then received only as far as its place goes.
bool Rounds::post_sizes(const RadixSchedule::Round &round) {
    const std::vector<int> &slots = ws_.slots;
    std::vector<int64_t> &out_bytes = ws_.out_bytes, &in_bytes = ws_.in_bytes;
    int count = 0;
    ws_.meta_out.resize(slots.size() * groups_);
    ws_.meta_in.resize(slots.size() * groups_);
    for (size_t s = 0; s < slots.size(); ++s) {
        const int slot = slots[s];
        const bool first = first_hop(slot, round), last = last_hop(slot, round);
        for (int g = 0; g < groups_; ++g) {
            const size_t k = s * groups_ + g;
            if (first) {
                layout_.source(slot, g, &out_bytes[k]);
            } else {
                out_bytes[k] = held(ws_.where[slot], g);
            }
            const int64_t known = last ? layout_.destination_bytes(slot, g) : -1;
            if (config_.metadata_every_round || known < 0) {
                ws_.meta_out[count++] = out_bytes[k];
            } else {
                in_bytes[k] = known;
            }
        }
    }
    if (count == 0) return false;
    // Sizes that do not arrive (the sender failed and sends nothing) are taken as empty.
    std::fill(ws_.meta_in.begin(), ws_.meta_in.begin() + count, 0);
    reqs_.recv(ws_.meta_in.data(), count * static_cast<int64_t>(sizeof(int64_t)), recv_peer_, kTagMeta, ctx_.comm());
    reqs_.send(ws_.meta_out.data(), count * static_cast<int64_t>(sizeof(int64_t)), send_peer_, kTagMeta, ctx_.comm());
    return true;
}

void Rounds::read_sizes(const RadixSchedule::Round &round) {
    const std::vector<int> &slots = ws_.slots;
    std::vector<int64_t> &in_bytes = ws_.in_bytes;
    int count = 0;
    for (size_t s = 0; s < slots.size(); ++s) {
        const bool last = last_hop(slots[s], round);
        for (int g = 0; g < groups_; ++g) {
            const size_t k = s * groups_ + g;
            const int64_t known = last ? layout_.destination_bytes(slots[s], g) : -1;
            if (!config_.metadata_every_round && known >= 0) continue;
            const int64_t size = ws_.meta_in[count++];
            const int64_t place = known >= 0 ? known : last ? layout_.destination_capacity(slots[s], g) : block_;
            if (size < 0 || size > place || (known >= 0 && size != known)) {
                reqs_.fault(failf(MPI_ERR_TRUNCATE, "rank %d announces a %lld-byte block where %lld %s: send and receive "
                                  "counts do not match", recv_peer_, static_cast<long long>(size),
                                  static_cast<long long>(place), known >= 0 ? "are expected" : "fit"));
            }
            in_bytes[k] = std::clamp<int64_t>(size, 0, place);
        }
    }
}

// Phase 2 of a round: the data, one message each way. A block that stays takes a free position; a
// block passing through leaves its old one only when the round is over (end_round).
void Rounds::post_data(const RadixSchedule::Round &round) {
    const std::vector<int> &slots = ws_.slots;
    ws_.staying.assign(slots.size(), -1);
    BlockList &out = ws_.out, &in = ws_.in;
    out.clear();
    in.clear();
    for (size_t s = 0; s < slots.size(); ++s) {
        const int slot = slots[s];
        const bool first = first_hop(slot, round), last = last_hop(slot, round);
        if (!last) {
            TUCOLL_ASSERT(!ws_.free_positions.empty());
            ws_.staying[s] = ws_.free_positions.back();
            ws_.free_positions.pop_back();
            ++in_use_;
        }
        for (int g = 0; g < groups_; ++g) {
            const size_t k = s * groups_ + g;
            int64_t bytes = 0;
            const char *src = first ? layout_.source(slot, g, &bytes) : temp(ws_.where[slot], g);
            if (src != nullptr) out.add(src, ws_.out_bytes[k]);
            char *dst = last ? layout_.destination(slot, g, ws_.in_bytes[k]) : temp(ws_.staying[s], g);
            if (dst != nullptr) in.add(dst, ws_.in_bytes[k]);
            if (!last) stats_.temp_bytes += ws_.in_bytes[k];
        }
    }
    peak_ = std::max(peak_, in_use_);
    reqs_.recv(in, recv_peer_, kTagData, ctx_.comm());
    if (!out.empty()) stats_.count_send(out.bytes());
    reqs_.send(out, send_peer_, kTagData, ctx_.comm());
}

void Rounds::end_round(const RadixSchedule::Round &round) {
    const std::vector<int> &slots = ws_.slots;
    for (size_t s = 0; s < slots.size(); ++s) {
        const int slot = slots[s];
        const bool first = first_hop(slot, round), last = last_hop(slot, round);
        if (!first) {  // its old position is free again
            ws_.free_positions.push_back(ws_.where[slot]);
            --in_use_;
        }
        ws_.where[slot] = ws_.staying[s];
        for (int g = 0; g < groups_; ++g) {
            const size_t k = s * groups_ + g;
            if (last) {
                layout_.arrived(slot, g, ws_.in_bytes[k]);
            } else {
                held(ws_.staying[s], g) = ws_.in_bytes[k];
            }
        }
    }
}

}  // namespace

Task run_tuna_rounds(Context &ctx, const TunaLayout &layout, const TunaConfig &config, CallStats &stats) {
    Rounds rounds(ctx, layout, config, stats);  // in this coroutine's frame, as long as the rounds run
    Requests &reqs = rounds.requests();
    rounds.copy_slot_zero();
    stats.rounds += rounds.schedule().num_rounds();
    if (rounds.ring_size() == 1) co_return MPI_SUCCESS;
    if (rounds.direct_only()) {
        rounds.post_direct_only();
        co_await reqs.completion();
        rounds.direct_only_arrived();
        co_return MPI_SUCCESS;
    }
    rounds.allocate_temp();
    for (const auto &round : rounds.schedule().rounds()) {
        rounds.begin_round(round);
        if (rounds.post_sizes(round)) {
            co_await reqs.completion();
            rounds.read_sizes(round);
        }
        rounds.post_data(round);
        co_await reqs.completion();
        rounds.end_round(round);
    }
    rounds.finish();
    co_return MPI_SUCCESS;
}

}  // namespace tucoll::alltoallv
