// The order in which a communicator's outstanding operations start MPI collectives.
//
// MPI matches the collectives of a communicator by the order in which each rank starts them. The
// program starts tucoll's calls in one order on every rank, but some calls start an MPI collective
// on the context's private communicator only once an earlier step has completed (auto's choice,
// the vendor's MPI_Ialltoallv, once the features' reduction is in), and what completes first
// differs between ranks: a rank that waits for a later call may find its reduction done first.
// So an operation that may start a collective after its start holds a place here from its start
// (taken in the program's call order), and a collective starts only where no operation started
// before it holds one: every rank then starts them in the calls' order, whatever completed where.
// (A blocking call completes what is outstanding on the communicator first: it never waits here.)
#pragma once

#include <algorithm>
#include <vector>

namespace tucoll {

class Requests;

class CollectiveOrder {
  public:
    // True when `op` may start a collective now: it holds the first place, or none is held.
    bool turn(const Requests *op) const { return holders_.empty() || holders_.front().op == op; }
    bool holds(const Requests *op) const { return find(op) != holders_.end(); }
    // One more hold by `op`; a new place is taken at the end (at its start: see Requests).
    void hold(const Requests *op) {
        auto it = find(op);
        if (it == holders_.end()) {
            holders_.push_back({op, 1});
        } else {
            ++it->count;
        }
    }
    // One hold fewer; the place is given up with the last.
    void release(const Requests *op) {
        auto it = find(op);
        if (it != holders_.end() && --it->count == 0) holders_.erase(it);
    }
    // The operation has ended: whatever it held.
    void forget(const Requests *op) {
        auto it = find(op);
        if (it != holders_.end()) holders_.erase(it);
    }

  private:
    struct Holder {
        const Requests *op;
        int count;
    };
    // A handful at most (the operations outstanding on one communicator): a vector.
    std::vector<Holder>::iterator find(const Requests *op) {
        return std::find_if(holders_.begin(), holders_.end(), [op](const Holder &h) { return h.op == op; });
    }
    std::vector<Holder>::const_iterator find(const Requests *op) const {
        return std::find_if(holders_.begin(), holders_.end(), [op](const Holder &h) { return h.op == op; });
    }
    std::vector<Holder> holders_;
};

}  // namespace tucoll
