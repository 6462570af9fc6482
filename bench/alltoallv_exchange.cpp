#include "alltoallv_exchange.h"

#include "tucoll.h"

namespace tucoll::bench {

AlltoallvExchange::AlltoallvExchange(const BenchOptions &options, MPI_Comm comm, Layout layout)
    : options_(options), comm_(comm), layout_(layout) {}

std::string AlltoallvExchange::prepare(int64_t size) {
    int rank = 0, nprocs = 1;
    MPI_Comm_rank(comm_, &rank);
    MPI_Comm_size(comm_, &nprocs);
    if (types_.name != options_.type) {
        std::string err = TypePair::create(options_.type, &types_);
        if (!err.empty()) return err;
    }
    Workload workload;
    std::string err = Workload::create(options_.dist, size, nprocs, options_.seed, &workload);
    if (!err.empty()) return err;
    err = build_alltoallv(workload, types_, rank, layout_, &buffers_);
    reference_.clear();
    return err;
}

int AlltoallvExchange::run(const std::string &spec) {
    AlltoallvBuffers &b = buffers_;
    return tucoll_alltoallv_with(spec.c_str(), b.send.data(), b.sendcounts.data(), b.sdispls.data(), types_.send,
                                 b.recv.data(), b.recvcounts.data(), b.rdispls.data(), types_.recv, comm_);
}

int AlltoallvExchange::run_reference() {
    AlltoallvBuffers &b = buffers_;
    b.fill_recv_sentinel();
    // PMPI: the reference is the MPI library's own result even when tucoll's interposer is loaded.
    int rc = PMPI_Alltoallv(b.send.data(), b.sendcounts.data(), b.sdispls.data(), types_.send, b.recv.data(),
                            b.recvcounts.data(), b.rdispls.data(), types_.recv, comm_);
    reference_ = b.recv;
    return rc;
}

}  // namespace tucoll::bench
