#include "crs_exchange.h"

#include <algorithm>
#include <numeric>

#include "matrix.h"
#include "tucoll.h"
#include "workload.h"

namespace tucoll::bench {

std::string build_crs(const std::string &source, bool variable, int64_t size, const TypePair &types, uint64_t seed,
                      int rank, int nprocs, CrsInput *out) {
    *out = CrsInput();
    std::vector<int64_t> bytes;  // per message
    if (source.rfind("matrix:", 0) == 0) {
        SparseMatrix a;
        std::string err = read_matrix_market(source.substr(7), &a);
        if (!err.empty()) return err;
        if (types.send != MPI_INT || types.recv != MPI_INT) return "matrix workloads exchange counts and indices: use --type int";
        const ColumnNeeds needs = needed_columns(a, rank, nprocs);
        std::vector<int> values;
        for (size_t k = 0; k < needs.owners.size(); ++k) {
            out->dest.push_back(needs.owners[k]);
            if (variable) {
                for (int64_t c : needs.columns[k]) values.push_back(static_cast<int>(c));
                out->counts.push_back(static_cast<int>(needs.columns[k].size()));
            } else {
                values.push_back(static_cast<int>(needs.columns[k].size()));
                out->counts.push_back(1);
            }
        }
        out->total = static_cast<int>(values.size());
        out->values.resize(values.size() * sizeof(int) + sizeof(int));
        std::copy_n(reinterpret_cast<const unsigned char *>(values.data()), values.size() * sizeof(int), out->values.begin());
    } else if (source.rfind("random:", 0) == 0) {
        int degree = 0;
        try {
            degree = std::stoi(source.substr(7));
        } catch (const std::exception &) {
            return "bad degree in " + source;
        }
        if (degree < 0) return "bad degree in " + source;
        degree = std::min(degree, nprocs);
        // A partial Fisher-Yates shuffle driven by the counter hash: DEG distinct destinations.
        std::vector<int> ranks(nprocs);
        std::iota(ranks.begin(), ranks.end(), 0);
        for (int k = 0; k < degree; ++k) {
            const int j = k + static_cast<int>(mix(seed * 7919 + static_cast<uint64_t>(rank) * 131 + k) % (nprocs - k));
            std::swap(ranks[k], ranks[j]);
        }
        out->dest.assign(ranks.begin(), ranks.begin() + degree);
        std::sort(out->dest.begin(), out->dest.end());
        for (int k = 0; k < degree; ++k) {
            const int64_t b = variable ? static_cast<int64_t>(mix(seed ^ (static_cast<uint64_t>(rank) << 20) ^ out->dest[k]) %
                                                               static_cast<uint64_t>(size + 1))
                                       : size;
            out->counts.push_back(static_cast<int>(types.send_count(b)));
            out->total += out->counts.back();
        }
        out->values.resize(static_cast<size_t>(out->total + 1) * types.send_extent);
        for (size_t k = 0; k < out->values.size(); ++k) out->values[k] = static_cast<unsigned char>(mix(seed + rank * 1000003ULL + k));
    } else {
        return "unknown sparse workload \"" + source + "\" (matrix:PATH or random:DEG)";
    }
    out->displs.resize(out->counts.size());
    std::exclusive_scan(out->counts.begin(), out->counts.end(), out->displs.begin(), 0);
    return "";
}

namespace {
// The reference completes on the bench's communicator before the timed calls start: nothing else
// is in flight to match its messages.
constexpr int kReferenceTag = 0x7e5;
}  // namespace

int crs_reference(const CrsInput &in, const TypePair &types, MPI_Comm comm, CrsResult *out) {
    int p = 1;
    MPI_Comm_size(comm, &p);
    // Packed bytes per message, grouped by destination (in the order messages are listed).
    std::vector<int> messages(p, 0), bytes(p, 0);
    for (size_t k = 0; k < in.dest.size(); ++k) {
        ++messages[in.dest[k]];
        bytes[in.dest[k]] += static_cast<int>(in.counts[k] * types.send_size);
    }
    std::vector<int> send_meta(2 * p), recv_meta(2 * p);
    for (int d = 0; d < p; ++d) {
        send_meta[2 * d] = messages[d];
        send_meta[2 * d + 1] = bytes[d];
    }
    int rc = PMPI_Alltoall(send_meta.data(), 2, MPI_INT, recv_meta.data(), 2, MPI_INT, comm);
    if (rc != MPI_SUCCESS) return rc;
    std::vector<int> sdispls(p), rcounts(p), rdispls(p);
    std::exclusive_scan(bytes.begin(), bytes.end(), sdispls.begin(), 0);
    for (int s = 0; s < p; ++s) rcounts[s] = recv_meta[2 * s + 1];
    std::exclusive_scan(rcounts.begin(), rcounts.end(), rdispls.begin(), 0);
    const int send_total = sdispls[p - 1] + bytes[p - 1], recv_total = rdispls[p - 1] + rcounts[p - 1];
    std::vector<unsigned char> packed(send_total + 1), received(recv_total + 1);
    std::vector<int> cursor = sdispls;
    for (size_t k = 0; k < in.dest.size(); ++k) {
        int position = 0;
        const int n = static_cast<int>(in.counts[k] * types.send_size);
        MPI_Pack(in.values.data() + static_cast<int64_t>(in.displs[k]) * types.send_extent, in.counts[k], types.send,
                 packed.data() + cursor[in.dest[k]], n, &position, comm);
        cursor[in.dest[k]] += n;
    }
    // Point to point with the pairs that have a message, not the vendor's MPI_Alltoallv: that
    // posts P requests per rank even for empty blocks, and SimGrid completes them one waitany at
    // a time: at P = 1024 the check ran for minutes where the run without it took 24 s.
    std::vector<MPI_Request> requests;
    for (int s = 0; s < p; ++s) {
        if (recv_meta[2 * s] == 0) continue;
        requests.emplace_back();
        rc = PMPI_Irecv(received.data() + rdispls[s], rcounts[s], MPI_BYTE, s, kReferenceTag, comm, &requests.back());
        if (rc != MPI_SUCCESS) return rc;
    }
    for (int d = 0; d < p; ++d) {
        if (messages[d] == 0) continue;
        requests.emplace_back();
        rc = PMPI_Isend(packed.data() + sdispls[d], bytes[d], MPI_BYTE, d, kReferenceTag, comm, &requests.back());
        if (rc != MPI_SUCCESS) return rc;
    }
    rc = PMPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) return rc;
    // With at most one message per pair (what the workloads generate) the bytes from a source
    // are that message.
    *out = CrsResult();
    for (int s = 0; s < p; ++s) {
        if (recv_meta[2 * s] == 0) continue;
        out->src.push_back(s);
        out->counts.push_back(static_cast<int>(rcounts[s] / types.recv_size));
        out->data.emplace_back(received.begin() + rdispls[s], received.begin() + rdispls[s] + rcounts[s]);
    }
    return MPI_SUCCESS;
}

CrsExchange::CrsExchange(const BenchOptions &options, MPI_Comm comm, bool variable, std::string source)
    : options_(options), comm_(comm), variable_(variable), source_(std::move(source)) {}

CrsExchange::~CrsExchange() { reset_output(); }

std::string CrsExchange::prepare(int64_t size) {
    int rank = 0, p = 1;
    MPI_Comm_rank(comm_, &rank);
    MPI_Comm_size(comm_, &p);
    if (types_.name != options_.type) {
        std::string err = TypePair::create(options_.type, &types_);
        if (!err.empty()) return err;
    }
    if (!variable_ && types_.send_size != types_.recv_size) return "alltoall_crs needs one element size on both sides";
    reference_ = CrsResult();
    return build_crs(source_, variable_, size, types_, options_.seed, rank, p, &input_);
}

void CrsExchange::reset_output() {
    tucoll_free(src_);
    tucoll_free(recvcounts_);
    tucoll_free(rdispls_);
    tucoll_free(recvvals_);
    src_ = recvcounts_ = rdispls_ = nullptr;
    recvvals_ = nullptr;
}

int CrsExchange::run(const std::string &spec) {
    reset_output();
    recv_nnz_ = -1;
    recv_size_ = -1;
    const int nnz = static_cast<int>(input_.dest.size());
    if (variable_) {
        return tucoll_alltoallv_crs_with(spec.c_str(), nnz, input_.total, input_.dest.data(), input_.counts.data(),
                                         input_.displs.data(), types_.send, input_.values.data(), &recv_nnz_,
                                         &recv_size_, &src_, &recvcounts_, &rdispls_, types_.recv, &recvvals_, comm_);
    }
    const int count = input_.counts.empty() ? 0 : input_.counts[0];
    int every = 0;  // the constant message size must be the same on every rank
    MPI_Allreduce(&count, &every, 1, MPI_INT, MPI_MAX, comm_);
    return tucoll_alltoall_crs_with(spec.c_str(), nnz, input_.dest.data(), every, types_.send, input_.values.data(),
                                    &recv_nnz_, &src_, static_cast<int>(every * types_.send_size / types_.recv_size),
                                    types_.recv, &recvvals_, comm_);
}

std::string CrsExchange::workload() const {
    if (source_.rfind("matrix:", 0) == 0) {
        const size_t slash = source_.find_last_of('/');
        return "matrix:" + source_.substr(slash == std::string::npos ? 7 : slash + 1);
    }
    return source_;
}

int CrsExchange::run_reference() { return crs_reference(input_, types_, comm_, &reference_); }

int64_t CrsExchange::compare_with_reference() const {
    if (recv_nnz_ != static_cast<int>(reference_.src.size())) return 0;
    int64_t element = 0;
    for (int i = 0; i < recv_nnz_; ++i) {
        const int count = variable_ ? recvcounts_[i] : reference_.counts[i];
        if (src_[i] != reference_.src[i] || count != reference_.counts[i]) return i;
        std::vector<unsigned char> packed(reference_.data[i].size() + 1);
        int position = 0;
        MPI_Pack(static_cast<char *>(recvvals_) + element * types_.recv_extent, count, types_.recv, packed.data(),
                 static_cast<int>(packed.size()), &position, comm_);
        if (!std::equal(reference_.data[i].begin(), reference_.data[i].end(), packed.begin())) return i;
        element += count;
    }
    return -1;
}

}  // namespace tucoll::bench
