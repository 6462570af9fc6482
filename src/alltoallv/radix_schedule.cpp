#include "alltoallv/radix_schedule.h"

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
}

int RadixSchedule::lowest_digit(int slot) const {
    int x = 0;
    while (digit(slot, x) == 0) ++x;
    return x;
}

int RadixSchedule::highest_digit(int slot) const {
    int x = w_ - 1;
    while (digit(slot, x) == 0) --x;
    return x;
}

int RadixSchedule::temp_index(int slot) const {
    const int dx = highest_digit(slot);
    return slot - 1 - dx * (r_ - 1) - digit(slot, dx);
}

void RadixSchedule::slots_of(const Round &round, std::vector<int> *out) const {
    out->clear();
    const int64_t low = power_[round.x], period = power_[round.x + 1];
    for (int64_t base = round.distance; base < n_; base += period) {
        for (int64_t i = base; i < base + low && i < n_; ++i) out->push_back(static_cast<int>(i));
    }
}

}  // namespace tucoll::alltoallv
