#include "allgather_exchange.h"

#include "tucoll.h"
#include "workload.h"

namespace tucoll::bench {

std::string allgatherv_block_sizes(const std::string &dist, int64_t size, int nprocs, uint64_t seed,
                                   std::vector<int64_t> *out) {
    Workload w;
    std::string err = Workload::create(dist, size, nprocs, seed, &w);
    if (err.empty()) *out = w.row(0);
    return err;
}

AllgatherExchange::AllgatherExchange(const BenchOptions &options, MPI_Comm comm, bool vector, bool in_place,
                                     Layout layout)
    // MPI_Allgather fixes the layout of the receive buffer: block j at j * recvcount.
    : options_(options), comm_(comm), vector_(vector), in_place_(in_place), layout_(vector ? layout : Layout::kPacked) {}

std::string AllgatherExchange::prepare(int64_t size) {
    int rank = 0, nprocs = 1;
    MPI_Comm_rank(comm_, &rank);
    MPI_Comm_size(comm_, &nprocs);
    if (types_.name != options_.type) {
        std::string err = TypePair::create(options_.type, &types_);
        if (!err.empty()) return err;
    }
    std::vector<int64_t> blocks(nprocs, size);
    if (vector_) {
        std::string err = allgatherv_block_sizes(options_.dist, size, nprocs, options_.seed, &blocks);
        if (!err.empty()) return err;
    }
    reference_.clear();
    return build_allgather(blocks, types_, rank, layout_, in_place_, &buffers_);
}

int AllgatherExchange::run(const std::string &spec) {
    AllgatherBuffers &b = buffers_;
    const void *send = in_place_ ? MPI_IN_PLACE : b.send.data();
    if (vector_) {
        return tucoll_allgatherv_with(spec.c_str(), send, b.sendcount, types_.send, b.recv.data(), b.recvcounts.data(),
                                      b.displs.data(), types_.recv, comm_);
    }
    return tucoll_allgather_with(spec.c_str(), send, b.sendcount, types_.send, b.recv.data(), b.recvcounts[0],
                                 types_.recv, comm_);
}

int AllgatherExchange::run_plain() {
    AllgatherBuffers &b = buffers_;
    const void *send = in_place_ ? MPI_IN_PLACE : b.send.data();
    return vector_ ? MPI_Allgatherv(send, b.sendcount, types_.send, b.recv.data(), b.recvcounts.data(), b.displs.data(),
                                    types_.recv, comm_)
                   : MPI_Allgather(send, b.sendcount, types_.send, b.recv.data(), b.recvcounts[0], types_.recv, comm_);
}

int AllgatherExchange::run_reference() {
    AllgatherBuffers &b = buffers_;
    b.reset_recv();
    const void *send = in_place_ ? MPI_IN_PLACE : b.send.data();
    // PMPI: the MPI library's own result even when tucoll's interposer is loaded.
    const int rc = vector_ ? PMPI_Allgatherv(send, b.sendcount, types_.send, b.recv.data(), b.recvcounts.data(),
                                             b.displs.data(), types_.recv, comm_)
                           : PMPI_Allgather(send, b.sendcount, types_.send, b.recv.data(), b.recvcounts[0],
                                            types_.recv, comm_);
    reference_ = b.recv;
    return rc;
}

}  // namespace tucoll::bench
