#include "core/record.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/context.h"
#include "core/errors.h"
#include "core/stats.h"

namespace tucoll::record {

constexpr const char *kFormat = "tucoll-recording";
constexpr int kFormatVersion = 1;
// The manifest lists calls one by one up to this many per communicator; beyond it, counts only.
constexpr size_t kCallLogLimit = 1 << 16;

struct Fingerprint {
    uint64_t a = 0, b = 0;
    bool operator==(const Fingerprint &o) const { return a == o.a && b == o.b; }
};
struct FingerprintHash {
    size_t operator()(const Fingerprint &f) const { return static_cast<size_t>(f.a ^ (f.b * 0x9e3779b97f4a7c15ULL)); }
};

struct Pattern {
    std::string collective, file;
    uint64_t calls = 0, first_call = 0;
    double seconds = 0, fastest = 0, slowest = 0;
    std::map<std::string, uint64_t> algorithms;  // what ran (auto's choice where auto chose)
    std::map<std::string, uint64_t> requested;   // what the program asked for ("auto", a spec)
    std::map<int64_t, uint64_t> type_sizes;      // rank 0's send datatype size
    int64_t total_bytes = 0, max_block = 0;
};

class Recorder {
  public:
    Recorder(Context &ctx, uint64_t generation, std::string dir);
    ~Recorder() { write_manifest(); }
    uint64_t generation() const { return generation_; }
    int before(Context &ctx, const char *collective, const std::vector<int64_t> &row, int64_t type_size,
               const char *requested, Call *call);
    void after(const Call &call, const CallStats &stats, int rc);
    void write_manifest();

  private:
    int add_pattern(Context &ctx, const char *collective, const std::vector<int64_t> &row, int *id);
    void warn(const std::string &what);

    uint64_t generation_;
    int rank_, size_;
    std::unordered_map<Fingerprint, int, FingerprintHash> ids_;  // the same on every rank
    // Rank 0 only.
    std::filesystem::path dir_;
    nlohmann::json communicator_;
    std::vector<Pattern> patterns_;
    std::vector<std::pair<int, double>> call_log_;
    std::vector<int64_t> matrix_;
    uint64_t calls_ = 0, known_calls_ = 0;
    double overhead_ = 0;       // rank 0's time in before(), calls of known patterns
    double overhead_new_ = 0;   // the same for calls that brought a new pattern (gather, files)
    bool warned_ = false;
};

namespace {

std::mutex state_mutex;
std::string state_dir;                 // guarded by state_mutex
std::atomic<uint64_t> generation{0};   // changes at every start and stop
std::atomic<bool> on{false};
std::once_flag env_once;
std::set<Recorder *> live;             // guarded by state_mutex
int leader_recorders = 0;              // guarded by state_mutex: directories made by this process

uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// Two independent 64-bit hashes of (collective, rank, row); the communicator's fingerprint is
// their XOR over the ranks, so a row moved to another rank changes it.
Fingerprint row_fingerprint(const char *collective, int rank, const std::vector<int64_t> &row) {
    uint64_t a = 0x243f6a8885a308d3ULL, b = 0x13198a2e03707344ULL;
    for (const char *c = collective; *c != '\0'; ++c) a = mix(a ^ static_cast<unsigned char>(*c));
    a = mix(a ^ static_cast<uint64_t>(rank));
    b = mix(b ^ a);
    for (size_t j = 0; j < row.size(); ++j) {
        const uint64_t v = static_cast<uint64_t>(row[j]);
        a = mix(a ^ v);
        b = mix(b + (v ^ (j << 1)));
    }
    return {a, b};
}

std::string file_safe(const std::string &text) {
    std::string out;
    for (char c : text) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
    return out.empty() ? "comm" : out;
}

void start_locked(const std::string &dir) {
    state_dir = dir;
    generation.fetch_add(1);
    on.store(!dir.empty());
}

void read_environment() {
    const char *dir = std::getenv("TUCOLL_RECORD");
    if (dir == nullptr || *dir == '\0') return;
    std::lock_guard<std::mutex> lock(state_mutex);
    start_locked(dir);
}

}  // namespace

Recorder::Recorder(Context &ctx, uint64_t gen, std::string dir) : generation_(gen), rank_(ctx.rank()), size_(ctx.size()) {
    {
        std::lock_guard<std::mutex> lock(state_mutex);
        live.insert(this);
    }
    if (rank_ != 0) return;
    char name[MPI_MAX_OBJECT_NAME] = "";
    int length = 0;
    // The private duplicate has no name; the program's communicator is named by MPI (or by it).
    MPI_Comm_get_name(ctx.user_comm(), name, &length);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    int k = 0;
    {
        std::lock_guard<std::mutex> lock(state_mutex);
        k = leader_recorders++;
    }
    const std::string label = file_safe(length > 0 ? name : "comm") + "." + file_safe(host) + "." +
                              std::to_string(getpid()) + "." + std::to_string(k);
    dir_ = std::filesystem::path(dir) / label;
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) warn("cannot create " + dir_.string() + ": " + ec.message());
    const Topology &t = ctx.topology();
    communicator_ = {{"name", length > 0 ? name : ""},
                     {"size", size_},
                     {"nodes", t.num_nodes},
                     {"ranks_per_node", t.ppn},
                     {"largest_node", t.max_local_size},
                     {"leader_host", host},
                     {"leader_pid", static_cast<long>(getpid())}};
}

void Recorder::warn(const std::string &what) {
    // A recording that cannot be written never changes what the program does, nor its traffic.
    if (warned_) return;
    warned_ = true;
    std::fprintf(stderr, "[tucoll] recording: %s\n", what.c_str());
}

int Recorder::add_pattern(Context &ctx, const char *collective, const std::vector<int64_t> &row, int *id) {
    *id = static_cast<int>(ids_.size());
    if (rank_ == 0) matrix_.resize(static_cast<size_t>(size_) * size_);
    TUCOLL_MPI(MPI_Gather(row.data(), size_, MPI_INT64_T, rank_ == 0 ? matrix_.data() : nullptr, size_, MPI_INT64_T, 0,
                          ctx.comm()));
    if (rank_ != 0) return MPI_SUCCESS;
    Pattern p;
    p.collective = collective;
    p.first_call = calls_;
    p.file = std::to_string(*id) + ".pattern";
    std::ofstream out(dir_ / p.file);
    for (int i = 0; i < size_; ++i) {
        for (int j = 0; j < size_; ++j) {
            const int64_t v = matrix_[static_cast<size_t>(i) * size_ + j];
            p.total_bytes += v;
            p.max_block = std::max(p.max_block, v);
            out << v << (j + 1 < size_ ? ' ' : '\n');
        }
    }
    if (!out) warn("cannot write " + (dir_ / p.file).string());
    patterns_.push_back(std::move(p));
    return MPI_SUCCESS;
}

int Recorder::before(Context &ctx, const char *collective, const std::vector<int64_t> &row, int64_t type_size,
                     const char *requested, Call *call) {
    const double started = MPI_Wtime();
    const Fingerprint mine = row_fingerprint(collective, rank_, row);
    Fingerprint all;
    TUCOLL_MPI(MPI_Allreduce(&mine, &all, 2, MPI_UINT64_T, MPI_BXOR, ctx.comm()));
    const auto found = ids_.find(all);
    const bool fresh = found == ids_.end();
    int id = fresh ? 0 : found->second;
    if (fresh) {
        TUCOLL_TRY(add_pattern(ctx, collective, row, &id));
        ids_.emplace(all, id);
    }
    call->on = true;
    call->pattern = id;
    if (rank_ == 0) {
        Pattern &p = patterns_[id];
        ++p.type_sizes[type_size];
        ++p.requested[requested];
        if (fresh) write_manifest();  // a new pattern is listed at once
        (fresh ? overhead_new_ : overhead_) += MPI_Wtime() - started;
        known_calls_ += !fresh;
    }
    call->started = MPI_Wtime();
    return MPI_SUCCESS;
}

void Recorder::after(const Call &call, const CallStats &stats, int rc) {
    if (rank_ != 0 || rc != MPI_SUCCESS) return;
    const double seconds = MPI_Wtime() - call.started;
    Pattern &p = patterns_[call.pattern];
    p.fastest = p.calls == 0 ? seconds : std::min(p.fastest, seconds);
    p.slowest = std::max(p.slowest, seconds);
    p.seconds += seconds;
    ++p.calls;
    ++p.algorithms[stats.algorithm];
    if (call_log_.size() < kCallLogLimit) call_log_.emplace_back(call.pattern, seconds);
    ++calls_;
}

void Recorder::write_manifest() {
    if (rank_ != 0 || dir_.empty()) return;
    nlohmann::json patterns = nlohmann::json::array();
    for (size_t id = 0; id < patterns_.size(); ++id) {
        const Pattern &p = patterns_[id];
        nlohmann::json sizes = nlohmann::json::object();
        for (const auto &[size, n] : p.type_sizes) sizes[std::to_string(size)] = n;
        patterns.push_back({{"id", id},
                            {"file", p.file},
                            {"collective", p.collective},
                            {"calls", p.calls},
                            {"first_call", p.first_call},
                            {"total_bytes", p.total_bytes},
                            {"max_block", p.max_block},
                            {"send_type_sizes", sizes},
                            {"requested", p.requested},
                            {"algorithms", p.algorithms},
                            {"seconds", {{"total", p.seconds},
                                         {"mean", p.calls ? p.seconds / static_cast<double>(p.calls) : 0.0},
                                         {"min", p.fastest},
                                         {"max", p.slowest}}}});
    }
    nlohmann::json log = nlohmann::json::array();
    for (const auto &[id, seconds] : call_log_) log.push_back({id, seconds});
    const nlohmann::json manifest = {
        {"format", kFormat},
        {"version", kFormatVersion},
        {"communicator", communicator_},
        {"calls", calls_},
        // Rank 0's time spent recording: per call of a known pattern (fingerprint and its
        // allreduce), and in all for the calls that brought a new one (gather, files).
        {"record_overhead_seconds",
         {{"known_pattern_calls", known_calls_},
          {"per_known_pattern_call", known_calls_ ? overhead_ / static_cast<double>(known_calls_) : 0.0},
          {"new_patterns_total", overhead_new_}}},
        {"patterns", patterns},
        {"call_log", {{"columns", {"pattern", "seconds"}},
                      {"complete", calls_ <= kCallLogLimit},
                      {"calls", log}}}};
    const std::filesystem::path path = dir_ / "manifest.json", partial = dir_ / "manifest.json.partial";
    {
        std::ofstream out(partial);
        out << manifest.dump(1) << '\n';
        if (!out) {
            warn("cannot write " + partial.string());
            return;
        }
    }
    std::error_code ec;
    std::filesystem::rename(partial, path, ec);  // readers never see half a manifest
    if (ec) warn("cannot write " + path.string() + ": " + ec.message());
}

void RecorderDeleter::operator()(Recorder *r) const {
    {
        std::lock_guard<std::mutex> lock(state_mutex);
        live.erase(r);
    }
    delete r;
}

bool active() {
    std::call_once(env_once, read_environment);
    return on.load(std::memory_order_relaxed);
}

int start(const char *dir) {
    if (dir == nullptr || *dir == '\0') return failf(MPI_ERR_ARG, "tucoll_record_start: no directory given");
    std::call_once(env_once, read_environment);
    std::lock_guard<std::mutex> lock(state_mutex);
    for (Recorder *r : live) r->write_manifest();
    start_locked(dir);
    return MPI_SUCCESS;
}

int stop() {
    std::call_once(env_once, read_environment);
    std::lock_guard<std::mutex> lock(state_mutex);
    for (Recorder *r : live) r->write_manifest();
    start_locked("");
    return MPI_SUCCESS;
}

int before(Context &ctx, const char *collective, const std::vector<int64_t> &row, int64_t type_size,
           const char *requested, Call *call) {
    const uint64_t gen = generation.load();
    RecorderPtr &recorder = ctx.recorder();
    if (!recorder || recorder->generation() != gen) {
        std::string dir;
        {
            std::lock_guard<std::mutex> lock(state_mutex);
            dir = state_dir;
        }
        recorder.reset();  // a recording of an earlier start ends here, its manifest written
        recorder.reset(new Recorder(ctx, gen, dir));
    }
    return recorder->before(ctx, collective, row, type_size, requested, call);
}

void after(Context &ctx, const Call &call, const CallStats &stats, int rc) {
    if (call.on && ctx.recorder()) ctx.recorder()->after(call, stats, rc);
}

}  // namespace tucoll::record
