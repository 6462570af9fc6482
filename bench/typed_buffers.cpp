#include "typed_buffers.h"

#include <climits>
#include <numeric>

namespace tucoll::bench {
namespace {

struct Placed {
    std::vector<int> displs;
    int64_t elements = 0;  // extent of the buffer in elements
};

Placed place(const std::vector<int64_t> &counts, Layout layout) {
    Placed p;
    const int n = static_cast<int>(counts.size());
    p.displs.assign(n, 0);
    int64_t next = 0;
    for (int k = 0; k < n; ++k) {
        const int i = layout == Layout::kPacked ? k : n - 1 - k;
        p.displs[i] = static_cast<int>(next);
        next += counts[i] + (layout == Layout::kScattered ? 1 : 0);
    }
    p.elements = next;
    return p;
}

}  // namespace

TypePair::~TypePair() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
        for (MPI_Datatype &t : owned_) MPI_Type_free(&t);
    }
}

TypePair::TypePair(TypePair &&other) noexcept { *this = std::move(other); }

TypePair &TypePair::operator=(TypePair &&other) noexcept {
    name = std::move(other.name);
    send = other.send;
    recv = other.recv;
    send_size = other.send_size;
    send_extent = other.send_extent;
    recv_size = other.recv_size;
    recv_extent = other.recv_extent;
    unit = other.unit;
    owned_.swap(other.owned_);
    return *this;
}

const std::vector<std::string> &type_pair_names() {
    static const std::vector<std::string> names = {"char", "int", "double", "vector", "char4-char", "int-vector",
                                                   "char4-int", "int-permuted", "permuted-lb"};
    return names;
}

std::string TypePair::create(const std::string &name, TypePair *out) {
    TypePair t;
    t.name = name;
    auto vector_type = [&t]() {
        MPI_Datatype v;
        MPI_Type_vector(2, 1, 2, MPI_INT, &v);  // ints at bytes 0 and 8: a hole in every element
        MPI_Type_commit(&v);
        t.owned_.push_back(v);
        return v;
    };
    auto char4_type = [&t]() {
        MPI_Datatype c;
        MPI_Type_contiguous(4, MPI_CHAR, &c);
        MPI_Type_commit(&c);
        t.owned_.push_back(c);
        return c;
    };
    // Two ints in swapped order, {1, 1} at {1, 0}: size, extent and true extent agree, yet the
    // type map is not memory order, so its bytes must be packed.
    auto permuted_type = [&t]() {
        MPI_Datatype x;
        const int lengths[2] = {1, 1}, displs[2] = {1, 0};
        MPI_Type_indexed(2, lengths, displs, MPI_INT, &x);
        MPI_Type_commit(&x);
        t.owned_.push_back(x);
        return x;
    };
    // An int whose lower bound is moved to -4 (extent still 4): dense and in order, used in place.
    auto lb_type = [&t]() {
        MPI_Datatype r;
        MPI_Type_create_resized(MPI_INT, -4, 4, &r);
        MPI_Type_commit(&r);
        t.owned_.push_back(r);
        return r;
    };
    if (name == "char") {
        t.send = t.recv = MPI_CHAR;
    } else if (name == "int") {
        t.send = t.recv = MPI_INT;
    } else if (name == "double") {
        t.send = t.recv = MPI_DOUBLE;
    } else if (name == "vector") {
        t.send = t.recv = vector_type();
    } else if (name == "char4-char") {
        t.send = char4_type();
        t.recv = MPI_CHAR;
    } else if (name == "int-vector") {
        t.send = MPI_INT;
        t.recv = vector_type();
    } else if (name == "char4-int") {
        t.send = char4_type();
        t.recv = MPI_INT;
    } else if (name == "int-permuted") {
        t.send = MPI_INT;
        t.recv = permuted_type();
    } else if (name == "permuted-lb") {
        t.send = permuted_type();
        t.recv = lb_type();
    } else {
        return "unknown type \"" + name + "\"";
    }
    MPI_Count size, lb, extent;
    MPI_Type_size_x(t.send, &size);
    MPI_Type_get_extent_x(t.send, &lb, &extent);
    t.send_size = size;
    t.send_extent = extent;
    MPI_Type_size_x(t.recv, &size);
    MPI_Type_get_extent_x(t.recv, &lb, &extent);
    t.recv_size = size;
    t.recv_extent = extent;
    t.unit = std::lcm(t.send_size, t.recv_size);
    *out = std::move(t);
    return "";
}

void AlltoallvBuffers::fill_recv_sentinel() { std::fill(recv.begin(), recv.end(), 0xA5); }

unsigned char alltoallv_send_byte(int rank, size_t k) {
    const uint64_t stream = mix(static_cast<uint64_t>(rank) + 1);
    return static_cast<unsigned char>(mix(stream ^ (k & ~size_t{7})) >> (8 * (k & 7)));
}

unsigned char allgather_send_byte(int rank, size_t k) {
    return static_cast<unsigned char>(mix(mix(static_cast<uint64_t>(rank) + 77) ^ k));
}

std::string build_alltoallv(const Workload &workload, const TypePair &types, int rank, Layout layout,
                            AlltoallvBuffers *out, bool with_data) {
    const int p = workload.nprocs();
    std::vector<int64_t> scount(p), rcount(p);
    for (int j = 0; j < p; ++j) {
        scount[j] = types.send_count(workload.bytes(rank, j));
        rcount[j] = types.recv_count(workload.bytes(j, rank));
    }
    Placed s = place(scount, layout), r = place(rcount, layout);
    if (s.elements > INT_MAX || r.elements > INT_MAX) return "workload needs displacements above INT_MAX";
    out->sendcounts.assign(scount.begin(), scount.end());
    out->recvcounts.assign(rcount.begin(), rcount.end());
    out->sdispls = std::move(s.displs);
    out->rdispls = std::move(r.displs);
    if (!with_data) return "";
    // One spare element of slack keeps pointers valid when a buffer holds no data.
    out->send.resize(static_cast<size_t>((s.elements + 1) * types.send_extent));
    out->recv.resize(static_cast<size_t>((r.elements + 1) * types.recv_extent));
    for (size_t k = 0; k < out->send.size(); ++k) out->send[k] = alltoallv_send_byte(rank, k);
    out->fill_recv_sentinel();
    return "";
}

std::string build_allgather(const std::vector<int64_t> &block_bytes, const TypePair &types, int rank, Layout layout,
                            bool in_place, AllgatherBuffers *out) {
    const int p = static_cast<int>(block_bytes.size());
    std::vector<int64_t> counts(p);
    for (int i = 0; i < p; ++i) counts[i] = types.recv_count(block_bytes[i]);
    const int64_t sendcount = types.send_count(block_bytes[rank]);
    Placed r = place(counts, layout);
    if (r.elements > INT_MAX || sendcount > INT_MAX) return "workload needs counts above INT_MAX";
    out->sendcount = static_cast<int>(sendcount);
    out->recvcounts.assign(counts.begin(), counts.end());
    out->displs = std::move(r.displs);
    out->send.resize(static_cast<size_t>((sendcount + 1) * types.send_extent));
    for (size_t k = 0; k < out->send.size(); ++k) out->send[k] = allgather_send_byte(rank, k);
    out->initial_recv.assign(static_cast<size_t>((r.elements + 1) * types.recv_extent), 0xA5);
    if (in_place) {
        // The own block's elements, as the receive type lays them out, carry the pattern.
        const size_t first = static_cast<size_t>(out->displs[rank]) * types.recv_extent;
        const size_t span = static_cast<size_t>(counts[rank]) * types.recv_extent;
        for (size_t k = 0; k < span; ++k) out->initial_recv[first + k] = allgather_send_byte(rank, k);
    }
    out->recv = out->initial_recv;
    return "";
}

int64_t first_difference(const Bytes &a, const Bytes &b) {
    if (a.size() != b.size()) return static_cast<int64_t>(std::min(a.size(), b.size()));
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i] != b[i]) return static_cast<int64_t>(i);
    }
    return -1;
}

}  // namespace tucoll::bench
