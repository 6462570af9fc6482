// The r-base digit schedule behind TuNA (seed 000 §III-A, III-C) on a ring of n ranks.
//
// A block travelling from ring position s to s + i is kept in "slot" i (its relative distance).
// Writing i in base r with w = ceil(log_r n) digits, round (x, z) moves every slot whose digit x
// equals z forward by z * r^x; rounds run x = 0..w-1, z = 1..r-1, skipping those with
// z * r^x >= n, so there are K <= w (r - 1) of them. A slot reaches its destination in the round
// of its highest non-zero digit. Slots with a single non-zero digit (z * r^x) go there in one hop:
// they are the K "direct" slots and never wait in a temporary buffer, which therefore holds at
// most B = n - K - 1 blocks between rounds (slot 0 stays home).
//
// §III-C gives each of those B slots a fixed position in T (its index formula is printed with
// dx = ceil(log_r o), which for r = 3 sends o = 4 to position -1 and o = 5 onto another block's;
// the highest non-zero digit of o is meant). A fixed position does not survive a pass-through
// hop, though: a slot with three or more non-zero digits sends its block on and receives the
// next one in the same round, so both need a place at once. tucoll therefore gives positions out
// as blocks arrive (tuna_engine.cpp) and sizes T by peak_positions(): B whenever no slot passes
// through (w <= 2), more otherwise.
#pragma once

#include <cstdint>
#include <vector>

namespace tucoll::alltoallv {

// Whether every block of a ring of n ranks goes straight to its destination at this radix (a
// single non-zero digit: n - 1 < r + 1), so that nothing ever waits in T.
inline bool every_block_direct(int n, int radix) { return n <= 2 || radix >= n - 1; }

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
    // Kept per slot: the engine asks them of every slot it moves in every round (seven times),
    // which worked out digit by digit cost 2.7 ms a call at n = 8192, r = 2.
    int lowest_digit(int slot) const { return lowest_[slot]; }    // of the lowest non-zero digit (slot > 0)
    int highest_digit(int slot) const { return highest_[slot]; }  // of the highest non-zero digit (slot > 0)
    bool direct(int slot) const { return lowest_digit(slot) == highest_digit(slot); }

    // The most T positions in use at once, blocks taking free positions as they arrive: before a
    // round the slots held, during it those plus the round's incoming blocks that stay.
    int peak_positions() const { return peak_; }

    // The slots moved in `round`, ascending.
    void slots_of(const Round &round, std::vector<int> *out) const;

  private:
    int n_, r_, w_;
    std::vector<int64_t> power_;  // r^0 .. r^w
    std::vector<uint8_t> lowest_, highest_;  // per slot (w <= 31)
    std::vector<Round> rounds_;
    int peak_ = 0;
};

}  // namespace tucoll::alltoallv
