#include "alltoallv_exchange.h"

#include <cstdio>

#include "tucoll.h"

namespace tucoll::bench {

AlltoallvExchange::AlltoallvExchange(const BenchOptions &options, MPI_Comm comm, Layout layout)
    : options_(options), comm_(comm), layout_(layout) {}

void AlltoallvExchange::free_plans() {
    for (auto &[spec, plan] : plans_) tucoll_request_free(&plan);
    plans_.clear();
}

std::string AlltoallvExchange::prepare(int64_t size) {
    free_plans();  // they point at the buffers about to be rebuilt
    int rank = 0;
    MPI_Comm_rank(comm_, &rank);
    MPI_Comm_size(comm_, &nprocs_);
    if (types_.name != options_.type) {
        std::string err = TypePair::create(options_.type, &types_);
        if (!err.empty()) return err;
    }
    Workload workload;
    std::string err = Workload::create_for_rank(options_.dist, size, comm_, options_.seed, &workload);
    if (!err.empty()) return err;
    err = build_alltoallv(workload, types_, rank, layout_, &buffers_);
    reference_.clear();
    // Rank 0 summarizes the whole P x P workload (O(P^2), outside any timing) and shares it.
    stats_.assign(BlockStats::names().size(), 0.0);
    if (rank == 0) {
        stats_ = block_stats(workload, [this](int64_t bytes) { return types_.send_count(bytes) * types_.send_size; })
                     .values();
    }
    MPI_Bcast(stats_.data(), static_cast<int>(stats_.size()), MPI_DOUBLE, 0, comm_);
    if (!err.empty()) return err;
    return device_.mirror(options_.memory, buffers_.send, buffers_.recv);
}

void AlltoallvExchange::reset_output() {
    buffers_.fill_recv_sentinel();
    device_.reset_recv(buffers_.recv);
}

int64_t AlltoallvExchange::compare_with_reference() const {
    return first_difference(device_.received(buffers_.recv), reference_);
}

void AlltoallvExchange::add_columns(Row &row) const {
    row.extra.emplace_back("chosen", row.chosen);
    const std::vector<std::string> &names = BlockStats::names();
    for (size_t i = 0; i < names.size(); ++i) {
        char value[32];
        std::snprintf(value, sizeof value, "%.6g", stats_[i]);
        row.extra.emplace_back(names[i], value);
    }
    const double mean_block = stats_[1];  // BlockStats::names(): total bytes / P^2
    add_bandwidth_columns(row, mean_block * nprocs_, nprocs_);
}

int AlltoallvExchange::run(const std::string &spec) {
    AlltoallvBuffers &b = buffers_;
    if (options_.persistent) {
        auto plan = plans_.find(spec);
        if (plan == plans_.end()) {
            tucoll_request_t request = TUCOLL_REQUEST_NULL;
            const int rc = tucoll_alltoallv_init_with(
                spec.c_str(), device_.send(b.send), b.sendcounts.data(), b.sdispls.data(), types_.send,
                device_.recv(b.recv), b.recvcounts.data(), b.rdispls.data(), types_.recv, comm_, MPI_INFO_NULL,
                &request);
            if (rc != MPI_SUCCESS) return rc;
            plan = plans_.emplace(spec, request).first;
        }
        const int rc = tucoll_start(&plan->second);
        return rc != MPI_SUCCESS ? rc : tucoll_wait(&plan->second);
    }
    return tucoll_alltoallv_with(spec.c_str(), device_.send(b.send), b.sendcounts.data(), b.sdispls.data(),
                                 types_.send, device_.recv(b.recv), b.recvcounts.data(), b.rdispls.data(), types_.recv, comm_);
}

int AlltoallvExchange::run_plain() {
    AlltoallvBuffers &b = buffers_;
    return MPI_Alltoallv(device_.send(b.send), b.sendcounts.data(), b.sdispls.data(), types_.send, device_.recv(b.recv),
                         b.recvcounts.data(), b.rdispls.data(), types_.recv, comm_);
}

int AlltoallvExchange::run_reference() {
    AlltoallvBuffers &b = buffers_;
    b.fill_recv_sentinel();
    // PMPI: the reference is the MPI library's own result even when tucoll's interposer is loaded.
    // Host buffers (--memory device included), so --check needs no CUDA-aware MPI.
    int rc = PMPI_Alltoallv(b.send.data(), b.sendcounts.data(), b.sdispls.data(), types_.send, b.recv.data(),
                            b.recvcounts.data(), b.rdispls.data(), types_.recv, comm_);
    reference_ = b.recv;
    return rc;
}

}  // namespace tucoll::bench
