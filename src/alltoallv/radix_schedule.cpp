#include "alltoallv/radix_schedule.h"

#include <algorithm>

namespace tucoll::alltoallv {

RadixSchedule::RadixSchedule(int n, int radix) : n_(n), r_(radix), w_(0) {
    power_.push_back(1);
    while (power_.back() < n_) {
        power_.push_back(power_.back() * r_);
        ++w_;
    }
    for (int x = 0; x < w_; ++x) {
        for (int z = 1; z < r_; ++z) {
            const int64_t distance = z * power_[x];
            if (distance >= n_) break;
            rounds_.push_back({x, z, distance});
        }
    }
    lowest_.assign(n_, 0);
    highest_.assign(n_, 0);
    for (int slot = 1; slot < n_; ++slot) {
        int x = 0;
        while (digit(slot, x) == 0) ++x;
        lowest_[slot] = static_cast<uint8_t>(x);
        x = w_ - 1;
        while (digit(slot, x) == 0) --x;
        highest_[slot] = static_cast<uint8_t>(x);
    }
    int held = 0;
    std::vector<int> slots;
    for (const Round &round : rounds_) {
        slots_of(round, &slots);
        int staying = 0, starting = 0, leaving = 0;
        for (int slot : slots) {
            const bool first = lowest_digit(slot) == round.x, last = highest_digit(slot) == round.x;
            staying += !last;
            starting += first && !last;
            leaving += last && !first;
        }
        peak_ = std::max(peak_, held + staying);
        held += starting - leaving;
    }
}

void RadixSchedule::slots_of(const Round &round, std::vector<int> *out) const {
    out->clear();
    const int64_t low = power_[round.x], period = power_[round.x + 1];
    for (int64_t base = round.distance; base < n_; base += period) {
        for (int64_t i = base; i < base + low && i < n_; ++i) out->push_back(static_cast<int>(i));
    }
}

}  // namespace tucoll::alltoallv
