#include "alltoall_exchange.h"

#include <algorithm>
#include <climits>
#include <cstdio>

#include "tucoll.h"

#ifdef TUCOLL_BENCH_CUDA
#include <cuda_runtime.h>
#endif

namespace tucoll::bench {

std::string AlltoallExchange::memory_supported(const std::string &memory) {
    if (memory == "host") return "";
#ifdef TUCOLL_BENCH_CUDA
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return "--memory device: no CUDA device here";
    return "";
#else
    return "--memory device needs a CUDA build of tucoll (a CUDA toolkit found by CMake)";
#endif
}

AlltoallExchange::~AlltoallExchange() { release_device(); }

void AlltoallExchange::release_device() {
#ifdef TUCOLL_BENCH_CUDA
    cudaFree(device_send_);
    cudaFree(device_recv_);
#endif
    device_send_ = device_recv_ = nullptr;
}

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
    std::string err = memory_supported(options_.memory);
    if (!err.empty()) return err;
#ifdef TUCOLL_BENCH_CUDA
    release_device();
    if (options_.memory == "device") {
        int devices = 1;
        cudaGetDeviceCount(&devices);
        cudaSetDevice(rank % devices);  // one rank per GPU of the node, ranks placed in turn
        if (cudaMalloc(&device_send_, std::max<size_t>(1, send_.size())) != cudaSuccess ||
            cudaMalloc(&device_recv_, std::max<size_t>(1, recv_.size())) != cudaSuccess ||
            cudaMemcpy(device_send_, send_.data(), send_.size(), cudaMemcpyHostToDevice) != cudaSuccess) {
            return "--memory device: cannot allocate or fill the GPU buffers";
        }
        reset_output();
    }
#endif
    return "";
}

void AlltoallExchange::reset_output() {
    std::fill(recv_.begin(), recv_.end(), 0xA5);
#ifdef TUCOLL_BENCH_CUDA
    if (device_recv_ != nullptr) cudaMemset(device_recv_, 0xA5, recv_.size());
#endif
}

void AlltoallExchange::capture_reference() {
    reference_ = recv_;
#ifdef TUCOLL_BENCH_CUDA
    if (device_recv_ != nullptr) cudaMemcpy(reference_.data(), device_recv_, recv_.size(), cudaMemcpyDeviceToHost);
#endif
}

int64_t AlltoallExchange::compare_with_reference() const {
#ifdef TUCOLL_BENCH_CUDA
    if (device_recv_ != nullptr) {
        back_.resize(recv_.size());
        cudaMemcpy(back_.data(), device_recv_, recv_.size(), cudaMemcpyDeviceToHost);
        return first_difference(back_, reference_);
    }
#endif
    return first_difference(recv_, reference_);
}

int AlltoallExchange::run(const std::string &spec) {
    return tucoll_alltoall_with(spec.c_str(), send_buffer(), sendcount_, types_.send, recv_buffer(), recvcount_,
                                types_.recv, comm_);
}

int AlltoallExchange::run_plain() {
    return MPI_Alltoall(send_buffer(), sendcount_, types_.send, recv_buffer(), recvcount_, types_.recv, comm_);
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
    const double seconds = row.median_us * 1e-6;
    const double algbw = seconds > 0 ? static_cast<double>(block_bytes_) * nprocs_ / seconds / 1e9 : 0.0;
    char text[32];
    std::snprintf(text, sizeof text, "%.4g", algbw);
    row.extra.emplace_back("algbw_GBps", text);
    std::snprintf(text, sizeof text, "%.4g", algbw * (nprocs_ - 1) / nprocs_);
    row.extra.emplace_back("busbw_GBps", text);
}

}  // namespace tucoll::bench
