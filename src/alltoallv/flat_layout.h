// The layout of a flat (one ring over the whole communicator) radix exchange: slot i of this
// rank is its block for rank + i, and a block that travelled i positions came from rank - i.
#pragma once

#include "alltoallv/alltoallv.h"
#include "alltoallv/tuna_engine.h"

namespace tucoll::alltoallv {

class FlatLayout final : public TunaLayout {
  public:
    FlatLayout(const Call &call, int nprocs, int rank) : call_(call), p_(nprocs), me_(rank) {}
    int ring_size() const override { return p_; }
    int ring_index() const override { return me_; }
    int ring_rank(int index) const override { return index; }
    int groups() const override { return 1; }
    const char *source(int slot, int, int64_t *bytes) const override {
        const int dest = (me_ + slot) % p_;
        *bytes = call_.scounts[dest];
        return call_.sbuf + call_.sdispls[dest];
    }
    char *destination(int slot, int, int64_t) const override { return call_.rbuf + call_.rdispls[from(slot)]; }
    int64_t destination_bytes(int slot, int) const override { return call_.rcounts[from(slot)]; }
    int64_t destination_capacity(int slot, int) const override { return call_.rcounts[from(slot)]; }

  private:
    int from(int slot) const { return (me_ - slot + p_) % p_; }
    const Call &call_;
    const int p_, me_;
};

// M: the largest block any rank sends (one reduction over the private communicator, unless the
// call already knows it: MPI_Allreduce, or MPI_Iallreduce awaited in a nonblocking call).
Task global_max_block(Context &ctx, const Call &call, int64_t *out);

}  // namespace tucoll::alltoallv
