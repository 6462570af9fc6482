#include "workload.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tucoll::bench {
namespace {

// Uniform in [0, 1) for block (src, dst), stream `k`.
double unit(uint64_t seed, int src, int dst, int k) {
    uint64_t h = mix(mix(seed * 0x100000001b3ULL + static_cast<uint64_t>(k)) ^
                     (static_cast<uint64_t>(src) << 32 | static_cast<uint32_t>(dst)));
    return static_cast<double>(h >> 11) * 0x1.0p-53;
}

constexpr double kPowerlawExponent = 0.95;  // seed 000, Figure 16(b)

enum class Resize { kNone, kTile, kStretch };

// A recorded n-rank matrix on P >= n ranks (tucoll tune replays a 16-rank recording at 1024):
//   tile     block (i, j) = block (i mod n, j mod n): every block size kept, each rank sends P/n
//            times what its original sent (to P/n times as many peers)
//   stretch  rank i plays original rank a = floor(i n / P), one of the |G_a| ranks of group a;
//            block (i, j) = block (a, b) / |G_b| rounded: each rank sends what its original sent,
//            spread over the ranks of each destination group (locality between groups kept)
std::vector<int64_t> resized(const std::vector<double> &source, int n, int p, Resize how, double scale) {
    std::vector<int64_t> out(static_cast<size_t>(p) * p);
    std::vector<int> group(p), group_size(n, 0);
    for (int i = 0; i < p; ++i) {
        group[i] = how == Resize::kTile ? i % n : static_cast<int>(static_cast<int64_t>(i) * n / p);
        ++group_size[group[i]];
    }
    for (int i = 0; i < p; ++i) {
        for (int j = 0; j < p; ++j) {
            double v = source[static_cast<size_t>(group[i]) * n + group[j]] * scale;
            if (how == Resize::kStretch) v /= group_size[group[j]];
            out[static_cast<size_t>(i) * p + j] = static_cast<int64_t>(std::llround(v));
        }
    }
    return out;
}

std::string load_matrix(const std::string &path, double scale, Resize how, int nprocs, std::vector<int64_t> *out) {
    std::ifstream in(path);
    if (!in) return "cannot open pattern file " + path;
    std::vector<double> values;
    std::string line;
    int rows = 0, width = -1;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        double v;
        int cols = 0;
        while (fields >> v) {
            if (v < 0) return path + ": negative entry on row " + std::to_string(rows);
            values.push_back(v);
            ++cols;
        }
        if (cols == 0) continue;
        if (width < 0) width = cols;
        if (cols != width) {
            return path + ": row " + std::to_string(rows) + " has " + std::to_string(cols) + " entries, row 0 has " +
                   std::to_string(width);
        }
        ++rows;
    }
    if (rows == 0 || rows != width) {
        return path + " is not a square matrix (" + std::to_string(rows) + " rows of " + std::to_string(width) + ")";
    }
    if (rows != nprocs && how == Resize::kNone) {
        return path + " is a " + std::to_string(rows) + "-rank pattern; run it with P=" + std::to_string(rows) +
               ", or resize it (:resize=tile or :resize=stretch)";
    }
    if (rows > nprocs) {
        return path + " is a " + std::to_string(rows) + "-rank pattern; it can be resized to more ranks, not to P=" +
               std::to_string(nprocs);
    }
    *out = resized(values, rows, nprocs, how == Resize::kNone ? Resize::kTile : how, scale);
    return "";
}

}  // namespace

int64_t onehuge_bytes(int64_t max_bytes) { return (int64_t{1} << 20) + max_bytes; }

std::string distribution_help() {
    return "uniform        block sizes uniform in [0, S]\n"
           "normal         normal with mean S/2 and standard deviation S/8, clipped to [0, S]\n"
           "powerlaw       S * X with X of density ~ x^-0.95 on (0, 1] (seed 000, Fig. 16b): few large blocks\n"
           "fft1           FFT problem N1 (seed 000 VI-A): ranks < ceil(0.625 P) send S bytes to ranks < ceil(0.78125 P)\n"
           "fft2           FFT problem N2 (seed 000 VI-A): S bytes everywhere, S/4 from the last rank\n"
           "zeros          every block empty\n"
           "onehot         rank i sends S bytes to rank i+1 (mod P) and nothing else\n"
           "onehuge        uniform in [0, S], except one block of 1 MiB + S bytes from rank 0 to rank P-1\n"
           "file:PATH[:scale=F][:resize=tile|stretch]  n x n byte matrix (row i = what rank i sends), entries\n"
           "               scaled by F; an n-rank matrix on P > n ranks: tile repeats it (block (i, j) = block\n"
           "               (i mod n, j mod n)), stretch lets rank i play rank floor(i n / P) and splits each\n"
           "               block over the ranks of its destination's group\n";
}

std::string Workload::create(const std::string &dist, int64_t max_bytes, int nprocs, uint64_t seed, Workload *out) {
    Workload w;
    w.name_ = dist;
    w.max_bytes_ = max_bytes;
    w.nprocs_ = nprocs;
    w.seed_ = seed;
    if (max_bytes < 0) return "size must not be negative";
    static const std::pair<const char *, Kind> kinds[] = {
        {"uniform", Kind::kUniform}, {"normal", Kind::kNormal}, {"powerlaw", Kind::kPowerlaw},
        {"fft1", Kind::kFft1},       {"fft2", Kind::kFft2},     {"zeros", Kind::kZeros},
        {"onehot", Kind::kOnehot},   {"onehuge", Kind::kOnehuge}};
    bool found = false;
    for (const auto &k : kinds) {
        if (dist == k.first) {
            w.kind_ = k.second;
            found = true;
        }
    }
    if (!found && dist.rfind("file:", 0) == 0) {
        std::string rest = dist.substr(5);
        double scale = 1.0;
        Resize how = Resize::kNone;
        // Options at the end, each after a colon: scale=F, resize=tile|stretch.
        for (size_t colon = rest.rfind(':'); colon != std::string::npos; colon = rest.rfind(':')) {
            const std::string option = rest.substr(colon + 1);
            if (option.rfind("scale=", 0) == 0) {
                try {
                    size_t used = 0;
                    scale = std::stod(option.substr(6), &used);
                    if (used != option.size() - 6 || !(scale >= 0)) throw std::invalid_argument("scale");
                } catch (const std::exception &) {
                    return "bad scale in " + dist;
                }
            } else if (option == "resize=tile" || option == "resize=stretch") {
                how = option == "resize=tile" ? Resize::kTile : Resize::kStretch;
            } else if (option.rfind("resize=", 0) == 0) {
                return "bad resize in " + dist + " (tile or stretch)";
            } else {
                break;
            }
            rest = rest.substr(0, colon);
        }
        w.kind_ = Kind::kFile;
        std::string err = load_matrix(rest, scale, how, nprocs, &w.matrix_);
        if (!err.empty()) return err;
        found = true;
    }
    if (!found) return "unknown distribution \"" + dist + "\"";
    *out = std::move(w);
    return "";
}

int64_t Workload::bytes(int src, int dst) const {
    const int p = nprocs_;
    const int64_t s = max_bytes_;
    switch (kind_) {
        case Kind::kUniform:
            return std::min<int64_t>(s, static_cast<int64_t>(unit(seed_, src, dst, 0) * static_cast<double>(s + 1)));
        case Kind::kNormal: {
            // Box-Muller on two independent uniforms of this block.
            double u1 = 1.0 - unit(seed_, src, dst, 1), u2 = unit(seed_, src, dst, 2);
            double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
            double v = std::round(s / 2.0 + z * s / 8.0);
            return static_cast<int64_t>(std::clamp(v, 0.0, static_cast<double>(s)));
        }
        case Kind::kPowerlaw: {
            // Inverse CDF of density ~ x^-a on (0, 1]: F(x) = x^(1-a).
            double x = std::pow(unit(seed_, src, dst, 3), 1.0 / (1.0 - kPowerlawExponent));
            return std::min<int64_t>(s, static_cast<int64_t>(x * static_cast<double>(s + 1)));
        }
        case Kind::kFft1: {
            const int workers = static_cast<int>(std::ceil(0.625 * p));
            const int filled = static_cast<int>(std::ceil(0.78125 * p));
            return (src < workers && dst < filled) ? s : 0;
        }
        case Kind::kFft2:
            return src == p - 1 ? s / 4 : s;
        case Kind::kZeros:
            return 0;
        case Kind::kOnehot:
            return dst == (src + 1) % p ? s : 0;
        case Kind::kOnehuge:
            if (src == 0 && dst == p - 1) return onehuge_bytes(s);
            return std::min<int64_t>(s, static_cast<int64_t>(unit(seed_, src, dst, 0) * static_cast<double>(s + 1)));
        case Kind::kFile:
            if (only_rank_ < 0) return matrix_[static_cast<size_t>(src) * p + dst];
            if (src == only_rank_) return own_row_[dst];
            if (dst == only_rank_) return own_column_[src];
            throw std::logic_error("a file workload of one rank asked for another rank's block");
    }
    return 0;
}

const std::vector<std::string> &BlockStats::names() {
    static const std::vector<std::string> n = {"max_block",  "mean_block", "busiest_mean_block",
                                               "median_block", "std_block", "skew_block",
                                               "zero_share", "total_bytes", "rank_imbalance"};
    return n;
}

std::vector<double> BlockStats::values() const {
    return {max_block, mean_block, busiest_mean_block, median_block, std_block,
            skew_block, zero_share, total_bytes, rank_imbalance};
}

BlockStats summarize_blocks(std::vector<double> blocks, int nprocs) {
    BlockStats s;
    const double n = static_cast<double>(blocks.size());
    if (blocks.empty()) return s;
    double busiest = 0, zeros = 0;
    for (int i = 0; i < nprocs; ++i) {
        double row = 0;
        for (int j = 0; j < nprocs; ++j) {
            const double b = blocks[static_cast<size_t>(i) * nprocs + j];
            row += b;
            s.max_block = std::max(s.max_block, b);
            zeros += b == 0;
        }
        s.total_bytes += row;
        busiest = std::max(busiest, row);
    }
    s.mean_block = s.total_bytes / n;
    s.busiest_mean_block = busiest / nprocs;
    s.zero_share = zeros / n;
    s.rank_imbalance = s.total_bytes > 0 ? busiest / (s.total_bytes / nprocs) : 1.0;
    double m2 = 0, m3 = 0;
    for (double b : blocks) {
        const double d = b - s.mean_block;
        m2 += d * d;
        m3 += d * d * d;
    }
    m2 /= n;
    m3 /= n;
    s.std_block = std::sqrt(m2);
    s.skew_block = m2 > 0 ? m3 / std::pow(m2, 1.5) : 0.0;
    const size_t mid = blocks.size() / 2;
    std::nth_element(blocks.begin(), blocks.begin() + static_cast<std::ptrdiff_t>(mid), blocks.end());
    s.median_block = blocks[mid];
    if (blocks.size() % 2 == 0) {
        const double below = *std::max_element(blocks.begin(), blocks.begin() + static_cast<std::ptrdiff_t>(mid));
        s.median_block = 0.5 * (s.median_block + below);
    }
    return s;
}

std::string Workload::create_for_rank(const std::string &dist, int64_t max_bytes, MPI_Comm comm, uint64_t seed,
                                      Workload *out) {
    int rank = 0, p = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    if (dist.rfind("file:", 0) != 0) return create(dist, max_bytes, p, seed, out);  // O(1) per rank already

    Workload w;
    std::string err;
    if (rank == 0) err = create(dist, max_bytes, p, seed, &w);
    // Rank 0's verdict, to everyone.
    int length = static_cast<int>(err.size());
    MPI_Bcast(&length, 1, MPI_INT, 0, comm);
    err.resize(static_cast<size_t>(length));
    MPI_Bcast(err.data(), length, MPI_CHAR, 0, comm);
    if (!err.empty()) return err;

    std::vector<int64_t> columns;  // the transpose, row j = column j
    if (rank == 0) {
        columns.resize(w.matrix_.size());
        for (int i = 0; i < p; ++i) {
            for (int j = 0; j < p; ++j) columns[static_cast<size_t>(j) * p + i] = w.matrix_[static_cast<size_t>(i) * p + j];
        }
    } else {
        w.kind_ = Kind::kFile;
        w.name_ = dist;
        w.max_bytes_ = max_bytes;
        w.nprocs_ = p;
        w.seed_ = seed;
        w.only_rank_ = rank;
        w.own_row_.resize(static_cast<size_t>(p));
        w.own_column_.resize(static_cast<size_t>(p));
    }
    // Rank 0 keeps its data in matrix_; the scatters deliver only to the others.
    MPI_Scatter(w.matrix_.data(), p, MPI_INT64_T, rank == 0 ? MPI_IN_PLACE : w.own_row_.data(), p, MPI_INT64_T, 0,
                comm);
    MPI_Scatter(columns.data(), p, MPI_INT64_T, rank == 0 ? MPI_IN_PLACE : w.own_column_.data(), p, MPI_INT64_T, 0,
                comm);
    *out = std::move(w);
    return "";
}

std::vector<int64_t> Workload::row(int src) const {
    std::vector<int64_t> r(nprocs_);
    for (int j = 0; j < nprocs_; ++j) r[j] = bytes(src, j);
    return r;
}

std::vector<int64_t> Workload::column(int dst) const {
    std::vector<int64_t> c(nprocs_);
    for (int i = 0; i < nprocs_; ++i) c[i] = bytes(i, dst);
    return c;
}

}  // namespace tucoll::bench
