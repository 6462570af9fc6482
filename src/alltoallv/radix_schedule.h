// The r-base digit schedule behind TuNA (seed 000 §III-A, III-C) on a ring of n ranks.
//
// A block travelling from ring position s to s + i is kept in "slot" i (its relative distance).
// Writing i in base r with w = ceil(log_r n) digits, round (x, z) moves every slot whose digit x
// equals z forward by z * r^x; rounds run x = 0..w-1, z = 1..r-1, skipping those with
// z * r^x >= n, so there are K <= w (r - 1) of them. A slot reaches its destination in the round
// of its highest non-zero digit. Slots with a single non-zero digit (z * r^x) go there in one hop:
// they are the K "direct" slots and never wait in a temporary buffer, which therefore needs
// B = n - K - 1 positions (slot 0 stays home).
#pragma once

#include <cstdint>
#include <vector>

namespace tucoll::alltoallv {

class RadixSchedule {
  public:
    struct Round {
        int x;             // digit position
        int z;             // digit value
        int64_t distance;  // z * r^x
    };

    RadixSchedule(int n, int radix);

    int ring_size() const { return n_; }
    int radix() const { return r_; }
    int digits() const { return w_; }                  // w
    const std::vector<Round> &rounds() const { return rounds_; }
    int num_rounds() const { return static_cast<int>(rounds_.size()); }  // K
    int temp_positions() const { return n_ - 1 - num_rounds(); }         // B

    int digit(int slot, int x) const { return static_cast<int>(slot / power_[x] % r_); }
    int lowest_digit(int slot) const;   // position of the lowest non-zero digit (slot > 0)
    int highest_digit(int slot) const;  // position of the highest non-zero digit (slot > 0)
    bool direct(int slot) const { return lowest_digit(slot) == highest_digit(slot); }

    // §III-C: position in T of a non-direct slot, o - 1 - dx (r - 1) - dz, i.e. the slot index
    // minus slot 0 and the direct slots below it.
    int temp_index(int slot) const;

    // The slots moved in `round`, ascending.
    void slots_of(const Round &round, std::vector<int> *out) const;

  private:
    int n_, r_, w_;
    std::vector<int64_t> power_;  // r^0 .. r^w
    std::vector<Round> rounds_;
};

}  // namespace tucoll::alltoallv
