#include "alltoall_exchange.h"

#include <algorithm>
#include <climits>
#include <cstdio>

#include "tucoll.h"

namespace tucoll::bench {

std::string AlltoallExchange::prepare(int64_t size) {
    int rank = 0;
    MPI_Comm_rank(comm_, &rank);
    MPI_Comm_size(comm_, &nprocs_);
    if (types_.name != options_.type) {
        std::string err = TypePair::create(options_.type, &types_);
        if (!err.empty()) return err;
    }
    const int64_t scount = types_.send_count(size), rcount = types_.recv_count(size);
    if (scount > INT_MAX || rcount > INT_MAX) return "--size gives a count beyond an int";
    sendcount_ = static_cast<int>(scount);
    recvcount_ = static_cast<int>(rcount);
    block_bytes_ = scount * types_.send_size;
    send_.assign(static_cast<size_t>(nprocs_ * scount * types_.send_extent), 0);
    for (size_t k = 0; k < send_.size(); ++k) send_[k] = static_cast<unsigned char>(rank * 131 + k * 7);
    recv_.assign(static_cast<size_t>(nprocs_ * rcount * types_.recv_extent), 0xA5);
    reference_.clear();
    return device_.mirror(options_.memory, send_, recv_);
}

void AlltoallExchange::reset_output() {
    std::fill(recv_.begin(), recv_.end(), 0xA5);
    device_.reset_recv(recv_);
}

void AlltoallExchange::capture_reference() {
    reference_ = recv_;
}

int64_t AlltoallExchange::compare_with_reference() const {
    return first_difference(device_.received(recv_), reference_);
}

int AlltoallExchange::run(const std::string &spec) {
    return tucoll_alltoall_with(spec.c_str(), device_.send(send_), sendcount_, types_.send, device_.recv(recv_), recvcount_,
                                types_.recv, comm_);
}

int AlltoallExchange::run_plain() {
    return MPI_Alltoall(device_.send(send_), sendcount_, types_.send, device_.recv(recv_), recvcount_, types_.recv, comm_);
}

int AlltoallExchange::run_reference() {
    // The reference is computed on the host buffers (PMPI: the MPI library's own result even when
    // tucoll's interposer is loaded), so --check needs no CUDA-aware MPI.
    std::fill(recv_.begin(), recv_.end(), 0xA5);
    const int rc = PMPI_Alltoall(send_.data(), sendcount_, types_.send, recv_.data(), recvcount_, types_.recv, comm_);
    reference_ = recv_;
    return rc;
}

void AlltoallExchange::add_columns(Row &row) const {
    row.extra.emplace_back("chosen", row.chosen);
    add_bandwidth_columns(row, static_cast<double>(block_bytes_) * nprocs_, nprocs_);
}

}  // namespace tucoll::bench
