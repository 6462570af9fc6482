#include "alltoallv/tuna_engine.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "core/copy.h"
#include "core/errors.h"
#include "core/p2p.h"

namespace tucoll::alltoallv {
namespace {

// What the engine reuses from call to call on a communicator (no allocation in steady state).
struct EngineWorkspace {
    std::unique_ptr<RadixSchedule> schedule;
    std::vector<int> slots;
    std::vector<int64_t> out_bytes, in_bytes;
    std::vector<const char *> staged;
    std::vector<size_t> middles;
    std::vector<BlockList> lists;
    Requests reqs;

    const RadixSchedule &schedule_for(int n, int radix) {
        if (!schedule || schedule->ring_size() != n || schedule->radix() != radix) {
            schedule = std::make_unique<RadixSchedule>(n, radix);
        }
        return *schedule;
    }
};

// State of one call: T, what each position holds, and the per-round lists.
class Rounds {
  public:
    Rounds(Context &ctx, const TunaLayout &layout, const TunaConfig &config, CallStats &stats)
        : ctx_(ctx), layout_(layout), config_(config), stats_(stats), ws_(ctx.workspace<EngineWorkspace>()),
          schedule_(ws_.schedule_for(layout.ring_size(), config.radix)), n_(layout.ring_size()),
          me_(layout.ring_index()), groups_(layout.groups()), block_(config.max_block), slots_(ws_.slots),
          out_bytes_(ws_.out_bytes), in_bytes_(ws_.in_bytes), staged_(ws_.staged) {}

    int run();

  private:
    int position(int slot) const { return config_.tight_temp ? schedule_.temp_index(slot) : slot - 1; }
    char *temp(int slot, int group) const {
        return temp_ + (static_cast<int64_t>(position(slot)) * groups_ + group) * block_;
    }
    int64_t &held(int slot, int group) { return (*held_bytes_)[static_cast<size_t>(position(slot)) * groups_ + group]; }

    void copy_slot_zero();
    bool direct_only() const;
    int run_direct_only();
    int run_round(const RadixSchedule::Round &round);
    int stage_middles(const RadixSchedule::Round &round);

    Context &ctx_;
    const TunaLayout &layout_;
    const TunaConfig &config_;
    CallStats &stats_;
    EngineWorkspace &ws_;
    const RadixSchedule &schedule_;
    const int n_, me_, groups_;
    const int64_t block_;
    char *temp_ = nullptr;
    std::vector<int64_t> *held_bytes_ = nullptr;  // size of the block held per (position, group)
    std::vector<int64_t> *occupied_ = nullptr;    // 1 while a position holds a slot's blocks
    std::vector<int64_t> *meta_out_ = nullptr, *meta_in_ = nullptr;
    // Per-round lists (in the workspace), indexed like slots_ x groups.
    std::vector<int> &slots_;
    std::vector<int64_t> &out_bytes_, &in_bytes_;
    std::vector<const char *> &staged_;  // where a middle block's outgoing copy sits, or nullptr
};

void Rounds::copy_slot_zero() {
    for (int g = 0; g < groups_; ++g) {
        int64_t bytes = 0;
        const char *src = layout_.source(0, g, &bytes);
        local_copy(layout_.destination(0, g), src, bytes);
        layout_.arrived(0, g, bytes);
    }
}

// Every slot direct and every size known: the rounds do not depend on each other, and all of
// them are posted at once — the spread-out exchange, with no temporary buffer.
bool Rounds::direct_only() const {
    if (schedule_.temp_positions() > 0 || config_.metadata_every_round || !config_.tight_temp) return false;
    for (const auto &round : schedule_.rounds()) {
        for (int g = 0; g < groups_; ++g) {
            if (layout_.destination_bytes(static_cast<int>(round.distance), g) < 0) return false;
        }
    }
    return true;
}

int Rounds::run_direct_only() {
    Requests &reqs = ws_.reqs;
    std::vector<BlockList> &lists = ws_.lists;
    if (lists.size() < 2 * schedule_.rounds().size()) lists.resize(2 * schedule_.rounds().size());
    for (BlockList &l : lists) l.clear();
    size_t k = 0;
    for (const auto &round : schedule_.rounds()) {
        const int slot = static_cast<int>(round.distance);
        BlockList &in = lists[k++];
        for (int g = 0; g < groups_; ++g) in.add(layout_.destination(slot, g), layout_.destination_bytes(slot, g));
        TUCOLL_TRY(reqs.recv(in, layout_.ring_rank((me_ - slot % n_ + n_) % n_), kTagData, ctx_.comm()));
    }
    for (const auto &round : schedule_.rounds()) {
        const int slot = static_cast<int>(round.distance);
        BlockList &out = lists[k++];
        for (int g = 0; g < groups_; ++g) {
            int64_t bytes = 0;
            const char *src = layout_.source(slot, g, &bytes);
            out.add(src, bytes);
        }
        if (!out.empty()) stats_.count_send(out.bytes());
        TUCOLL_TRY(reqs.send(out, layout_.ring_rank((me_ + slot) % n_), kTagData, ctx_.comm()));
    }
    TUCOLL_TRY(reqs.wait_all());
    for (const auto &round : schedule_.rounds()) {
        const int slot = static_cast<int>(round.distance);
        for (int g = 0; g < groups_; ++g) layout_.arrived(slot, g, layout_.destination_bytes(slot, g));
    }
    return MPI_SUCCESS;
}

int Rounds::run() {
    copy_slot_zero();
    stats_.rounds += schedule_.num_rounds();
    if (n_ == 1) return MPI_SUCCESS;
    if (direct_only()) return run_direct_only();

    const int64_t positions = tuna_temp_positions(ctx_, n_, config_);
    const int64_t temp_bytes = positions * groups_ * block_;
    temp_ = ctx_.scratch(Slot::kTemp, static_cast<size_t>(temp_bytes));
    if (temp_ == nullptr && temp_bytes > 0) {
        return failf(MPI_ERR_NO_MEM, "cannot allocate the temporary buffer (%lld bytes)", static_cast<long long>(temp_bytes));
    }
    stats_.scratch_bytes += temp_bytes;
    held_bytes_ = &ctx_.index(IndexSlot::kMeta0, static_cast<size_t>(positions * groups_));
    occupied_ = &ctx_.index(IndexSlot::kMeta1, static_cast<size_t>(positions));
    meta_out_ = &ctx_.index(IndexSlot::kMeta2, static_cast<size_t>(n_) * groups_);
    meta_in_ = &ctx_.index(IndexSlot::kMeta3, static_cast<size_t>(n_) * groups_);
    for (const auto &round : schedule_.rounds()) TUCOLL_TRY(run_round(round));
    return MPI_SUCCESS;
}

int Rounds::run_round(const RadixSchedule::Round &round) {
    const MPI_Comm comm = ctx_.comm();
    const int64_t d = round.distance;
    const int send_peer = layout_.ring_rank(static_cast<int>((me_ + d) % n_));
    const int recv_peer = layout_.ring_rank(static_cast<int>((me_ - d + n_) % n_));
    schedule_.slots_of(round, &slots_);
    const size_t items = slots_.size() * groups_;
    out_bytes_.assign(items, 0);
    in_bytes_.assign(items, 0);

    // Phase 1: metadata — the sizes the receiver cannot know (blocks not yet at their
    // destination, or whose destination size is not local), in slot then group order.
    int count = 0;
    for (size_t s = 0; s < slots_.size(); ++s) {
        const int slot = slots_[s];
        const bool first = schedule_.lowest_digit(slot) == round.x;
        const bool last = schedule_.highest_digit(slot) == round.x;
        for (int g = 0; g < groups_; ++g) {
            const size_t k = s * groups_ + g;
            if (first) {
                layout_.source(slot, g, &out_bytes_[k]);
            } else {
                out_bytes_[k] = held(slot, g);
            }
            const int64_t known = last ? layout_.destination_bytes(slot, g) : -1;
            if (config_.metadata_every_round || known < 0) {
                (*meta_out_)[count++] = out_bytes_[k];
            } else {
                in_bytes_[k] = known;
            }
        }
    }
    if (count > 0) {
        TUCOLL_MPI(MPI_Sendrecv(meta_out_->data(), count, MPI_INT64_T, send_peer, kTagMeta, meta_in_->data(), count,
                                MPI_INT64_T, recv_peer, kTagMeta, comm, MPI_STATUS_IGNORE));
        count = 0;
        for (size_t s = 0; s < slots_.size(); ++s) {
            const bool last = schedule_.highest_digit(slots_[s]) == round.x;
            for (int g = 0; g < groups_; ++g) {
                const size_t k = s * groups_ + g;
                const int64_t known = last ? layout_.destination_bytes(slots_[s], g) : -1;
                if (!config_.metadata_every_round && known >= 0) continue;
                const int64_t size = (*meta_in_)[count++];
                // A block bound for T (or an unknown destination slot of M bytes) must fit.
                if (size < 0 || ((!last || known < 0) && size > block_) || (known >= 0 && size != known)) {
                    return failf(MPI_ERR_TRUNCATE, "rank %d announces a %lld-byte block where %lld fit; send and "
                                 "receive counts do not match", recv_peer, static_cast<long long>(size),
                                 static_cast<long long>(known >= 0 ? known : block_));
                }
                in_bytes_[k] = size;
            }
        }
    }

    // Blocks that pass through (neither first nor last hop) are sent from and received into the
    // same T position in this round; their outgoing copy is staged elsewhere first.
    TUCOLL_TRY(stage_middles(round));

    // Phase 2: the data, one message each way.
    if (ws_.lists.size() < 2) ws_.lists.resize(2);
    BlockList &out = ws_.lists[0], &in = ws_.lists[1];
    out.clear();
    in.clear();
    for (size_t s = 0; s < slots_.size(); ++s) {
        const int slot = slots_[s];
        const bool first = schedule_.lowest_digit(slot) == round.x;
        const bool last = schedule_.highest_digit(slot) == round.x;
        for (int g = 0; g < groups_; ++g) {
            const size_t k = s * groups_ + g;
            int64_t bytes = 0;
            const char *src = first ? layout_.source(slot, g, &bytes) : staged_[k] ? staged_[k] : temp(slot, g);
            out.add(src, out_bytes_[k]);
            in.add(last ? layout_.destination(slot, g) : temp(slot, g), in_bytes_[k]);
            if (!last) stats_.temp_bytes += in_bytes_[k];
        }
    }
    Requests &reqs = ws_.reqs;
    TUCOLL_TRY(reqs.recv(in, recv_peer, kTagData, comm));
    if (!out.empty()) stats_.count_send(out.bytes());
    TUCOLL_TRY(reqs.send(out, send_peer, kTagData, comm));
    TUCOLL_TRY(reqs.wait_all());

    for (size_t s = 0; s < slots_.size(); ++s) {
        const int slot = slots_[s];
        const bool first = schedule_.lowest_digit(slot) == round.x;
        const bool last = schedule_.highest_digit(slot) == round.x;
        for (int g = 0; g < groups_; ++g) {
            const size_t k = s * groups_ + g;
            if (last) {
                layout_.arrived(slot, g, in_bytes_[k]);
            } else {
                held(slot, g) = in_bytes_[k];
            }
        }
        if (!last) (*occupied_)[position(slot)] = 1;
        if (last && !first) (*occupied_)[position(slot)] = 0;
    }
    return MPI_SUCCESS;
}

// Outgoing copies of pass-through blocks go to T positions that are free during this round
// (slots not started yet or already delivered, other than this round's first receivers);
// only what does not fit there goes to the staging buffer.
int Rounds::stage_middles(const RadixSchedule::Round &round) {
    staged_.assign(slots_.size() * groups_, nullptr);
    std::vector<size_t> &middles = ws_.middles;
    middles.clear();
    for (size_t s = 0; s < slots_.size(); ++s) {
        const int slot = slots_[s];
        if (schedule_.lowest_digit(slot) < round.x && schedule_.highest_digit(slot) > round.x) {
            for (int g = 0; g < groups_; ++g) {
                if (out_bytes_[s * groups_ + g] > 0) middles.push_back(s * groups_ + g);
            }
        }
    }
    if (middles.empty()) return MPI_SUCCESS;

    std::vector<int64_t> &occupied = *occupied_;
    for (int slot : slots_) {
        if (schedule_.lowest_digit(slot) == round.x && schedule_.highest_digit(slot) != round.x) {
            occupied[position(slot)] = 2;  // receives into its own position this round
        }
    }
    size_t next = 0;
    int64_t position_index = 0;
    int group_index = groups_;  // forces a search for the first free position
    auto next_free = [&]() -> char * {
        if (group_index == groups_) {
            while (position_index < static_cast<int64_t>(occupied.size()) && occupied[position_index] != 0) ++position_index;
            if (position_index == static_cast<int64_t>(occupied.size())) return nullptr;
            group_index = 0;
            ++position_index;
        }
        return temp_ + ((position_index - 1) * groups_ + group_index++) * block_;
    };
    for (; next < middles.size(); ++next) {
        char *spot = next_free();
        if (spot == nullptr) break;
        staged_[middles[next]] = spot;
    }
    for (int slot : slots_) {
        if (schedule_.lowest_digit(slot) == round.x && schedule_.highest_digit(slot) != round.x) {
            occupied[position(slot)] = 0;
        }
    }
    int64_t overflow = 0;
    for (size_t m = next; m < middles.size(); ++m) overflow += out_bytes_[middles[m]];
    char *staging = ctx_.scratch(Slot::kStaging, static_cast<size_t>(overflow));
    if (staging == nullptr && overflow > 0) {
        return failf(MPI_ERR_NO_MEM, "cannot allocate %lld staging bytes", static_cast<long long>(overflow));
    }
    stats_.staging_bytes = std::max(stats_.staging_bytes, overflow);
    for (size_t m = next; m < middles.size(); ++m) {
        staged_[middles[m]] = staging;
        staging += out_bytes_[middles[m]];
    }
    for (size_t k : middles) {
        const int slot = slots_[k / groups_];
        local_copy(const_cast<char *>(staged_[k]), temp(slot, static_cast<int>(k % groups_)), out_bytes_[k]);
    }
    return MPI_SUCCESS;
}

}  // namespace

int64_t tuna_temp_positions(Context &ctx, int n, const TunaConfig &config) {
    if (n <= 1) return 0;
    return config.tight_temp ? ctx.workspace<EngineWorkspace>().schedule_for(n, config.radix).temp_positions() : n - 1;
}

int run_tuna_rounds(Context &ctx, const TunaLayout &layout, const TunaConfig &config, CallStats &stats) {
    return Rounds(ctx, layout, config, stats).run();
}

}  // namespace tucoll::alltoallv
