#include "core/record.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
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
// Calls whose fingerprints are agreed by one reduction: a recorded call costs 1/kWindow of an
// allreduce of kWindow x 16 bytes, and this rank's rows of the window are kept until then.
constexpr size_t kWindow = 32;

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

// A recorded call whose pattern is not yet agreed.
struct Pending {
    Fingerprint local;                 // this rank's row, keyed by the collective and the rank
    const char *collective = "";       // a string literal (the function's name)
    // Rank 0 only.
    int64_t type_size = 0;
    std::string requested, algorithm;
    double seconds = 0;
    bool completed = false;            // the call returned MPI_SUCCESS
};

class Recorder {
  public:
    Recorder(Context &ctx, uint64_t generation, std::string dir);
    ~Recorder();
    uint64_t generation() const { return generation_; }
    uint64_t order() const { return order_; }
    void before(const char *collective, const std::vector<int64_t> &row, int64_t type_size, const char *requested,
                Call *call);
    void completed(const Call &call, const CallStats &stats, int rc);
    // Collective where the window is full: the same on every rank, whose calls were the same.
    int agree_if_full() { return pending_.size() >= kWindow ? agree() : MPI_SUCCESS; }
    void add_overhead(double seconds) { overhead_ += seconds; }
    // Collective over the communicator: the pending calls' patterns are agreed, new ones
    // gathered and written, then the manifest.
    int flush();

  private:
    int agree();
    int add_pattern(const Pending &call, size_t index, int *id);
    void account(const Pending &call, int id);
    void write_manifest();
    void warn(const std::string &what);

    uint64_t generation_, order_;
    MPI_Comm comm_;  // the context's private communicator
    int rank_, size_;
    std::unordered_map<Fingerprint, int, FingerprintHash> ids_;  // the same on every rank
    std::vector<Pending> pending_;
    std::vector<int64_t> rows_;  // this rank's row of each pending call, kWindow x P
    // Rank 0 only.
    std::filesystem::path dir_;
    nlohmann::json communicator_;
    std::vector<Pattern> patterns_;
    std::vector<std::pair<int, double>> call_log_;
    std::vector<int64_t> matrix_;
    uint64_t calls_ = 0, agreements_ = 0;
    uint64_t not_recorded_ = 0;  // nonblocking calls that found the window full
    double overhead_ = 0;  // rank 0's time spent recording, agreements and files included
    bool warned_ = false;
};

namespace {

std::mutex state_mutex;
std::string state_dir;                 // guarded by state_mutex
std::atomic<uint64_t> generation{0};   // changes at every start and stop
std::atomic<bool> on{false};
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

Recorder::Recorder(Context &ctx, uint64_t gen, std::string dir)
    : generation_(gen), order_(ctx.creation_order()), comm_(ctx.comm()), rank_(ctx.rank()), size_(ctx.size()) {
    pending_.reserve(kWindow);
    rows_.resize(kWindow * static_cast<size_t>(size_));
    int k = 0;
    {
        std::lock_guard<std::mutex> lock(state_mutex);
        live.insert(this);
        if (rank_ == 0) k = leader_recorders++;
    }
    if (rank_ != 0) return;
    char name[MPI_MAX_OBJECT_NAME] = "";
    int length = 0;
    // The private duplicate has no name; the program's communicator is named by MPI (or by it).
    MPI_Comm_get_name(ctx.user_comm(), name, &length);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
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

Recorder::~Recorder() {
    {
        std::lock_guard<std::mutex> lock(state_mutex);
        live.erase(this);
    }
    // A recording stopped (or started again elsewhere) was agreed and written then: its directory
    // may be gone since.
    if (generation_ != record::generation.load()) return;
    // The context ends in a collective (MPI_Comm_free, MPI_Finalize), so the last window can be
    // agreed here; where MPI is already finalized (SMPI's exit), its calls are lost.
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) flush();
    else write_manifest();
}

void Recorder::warn(const std::string &what) {
    // A recording that cannot be written never changes what the program does, nor its traffic.
    if (warned_) return;
    warned_ = true;
    std::fprintf(stderr, "[tucoll] recording: %s\n", what.c_str());
}

void Recorder::before(const char *collective, const std::vector<int64_t> &row, int64_t type_size,
                      const char *requested, Call *call) {
    const double started = MPI_Wtime();
    if (pending_.size() >= kWindow) {  // nonblocking calls filled it: agreed at the next blocking call
        ++not_recorded_;
        return;
    }
    Pending p;
    p.local = row_fingerprint(collective, rank_, row);
    p.collective = collective;
    std::copy(row.begin(), row.end(), rows_.begin() + static_cast<std::ptrdiff_t>(pending_.size() * size_));
    if (rank_ == 0) {
        p.type_size = type_size;
        p.requested = requested;
    }
    call->on = true;
    call->pending = static_cast<int>(pending_.size());
    call->generation = generation_;
    call->window = agreements_;
    pending_.push_back(std::move(p));
    if (rank_ == 0) overhead_ += MPI_Wtime() - started;
    call->started = MPI_Wtime();
}

void Recorder::completed(const Call &call, const CallStats &stats, int rc) {
    // A call still in its window: one agreed since (the recording stopped meanwhile) is counted
    // without its time.
    if (rank_ != 0 || rc != MPI_SUCCESS || call.generation != generation_ || call.window != agreements_) return;
    Pending &p = pending_[call.pending];
    p.seconds = MPI_Wtime() - call.started;
    p.algorithm = stats.algorithm;
    p.completed = true;
}

int Recorder::add_pattern(const Pending &call, size_t index, int *id) {
    *id = static_cast<int>(ids_.size());
    if (rank_ == 0) matrix_.resize(static_cast<size_t>(size_) * size_);
    TUCOLL_MPI(MPI_Gather(rows_.data() + index * size_, size_, MPI_INT64_T, rank_ == 0 ? matrix_.data() : nullptr,
                          size_, MPI_INT64_T, 0, comm_));
    if (rank_ != 0) return MPI_SUCCESS;
    Pattern p;
    p.collective = call.collective;
    p.first_call = calls_ + index;
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

void Recorder::account(const Pending &call, int id) {
    Pattern &p = patterns_[id];
    ++p.type_sizes[call.type_size];
    ++p.requested[call.requested];
    if (!call.completed) return;
    p.fastest = p.calls == 0 ? call.seconds : std::min(p.fastest, call.seconds);
    p.slowest = std::max(p.slowest, call.seconds);
    p.seconds += call.seconds;
    ++p.calls;
    ++p.algorithms[call.algorithm];
    if (call_log_.size() < kCallLogLimit) call_log_.emplace_back(id, call.seconds);
}

int Recorder::agree() {
    const size_t n = pending_.size();
    if (n == 0) return MPI_SUCCESS;
    std::vector<Fingerprint> local(n), global(n);
    for (size_t k = 0; k < n; ++k) local[k] = pending_[k].local;
    // XOR over the ranks of per-rank hashes keyed by the rank: the matrix's fingerprint.
    int rc = MPI_Allreduce(local.data(), global.data(), static_cast<int>(2 * n), MPI_UINT64_T, MPI_BXOR, comm_);
    size_t added = 0;
    for (size_t k = 0; k < n && rc == MPI_SUCCESS; ++k) {
        auto found = ids_.find(global[k]);
        int id = found == ids_.end() ? -1 : found->second;
        if (id < 0) {
            rc = add_pattern(pending_[k], k, &id);
            if (rc != MPI_SUCCESS) break;
            ids_.emplace(global[k], id);
            ++added;
        }
        if (rank_ == 0) account(pending_[k], id);
    }
    ++agreements_;
    if (rank_ == 0) {
        calls_ += n;
        if (added > 0) write_manifest();  // new patterns are listed at once
    }
    pending_.clear();
    if (rc != MPI_SUCCESS) warn("a window of calls could not be agreed; they are not recorded");
    return rc;
}

int Recorder::flush() {
    const double started = MPI_Wtime();
    const int rc = agree();
    if (rank_ == 0) overhead_ += MPI_Wtime() - started;  // before the manifest that reports it
    write_manifest();
    return rc;
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
        // Nonblocking calls and persistent starts that found the window full (core/record.h).
        {"calls_not_recorded", not_recorded_},
        // Rank 0's time spent recording: fingerprints, the agreements (one allreduce per window
        // of calls), the gathers of new patterns and the files.
        {"record_overhead_seconds",
         {{"total", overhead_},
          {"per_call", calls_ ? overhead_ / static_cast<double>(calls_) : 0.0},
          {"agreements", agreements_},
          {"calls_per_agreement", kWindow}}},
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

void RecorderDeleter::operator()(Recorder *r) const { delete r; }

namespace {

// Every live recording agreed and written, in the order their contexts were made — the same on
// every rank, as for releasing contexts at MPI_Finalize — so that the agreements, collective
// over each communicator, meet.
void flush_all() {
    std::vector<Recorder *> recorders;
    {
        std::lock_guard<std::mutex> lock(state_mutex);
        recorders.assign(live.begin(), live.end());
    }
    std::sort(recorders.begin(), recorders.end(), [](Recorder *a, Recorder *b) { return a->order() < b->order(); });
    for (Recorder *r : recorders) r->flush();
}

// TUCOLL_RECORD, read at the first of these calls. A function-local static: after the first
// call its guard is one load, where std::call_once looks up thread-local state at every call.
void read_environment_once() {
    static const bool read = (read_environment(), true);
    (void)read;
}

}  // namespace

bool active() {
    read_environment_once();
    return on.load(std::memory_order_relaxed);
}

int start(const char *dir) {
    if (dir == nullptr || *dir == '\0') return failf(MPI_ERR_ARG, "tucoll_record_start: no directory given");
    read_environment_once();
    flush_all();
    std::lock_guard<std::mutex> lock(state_mutex);
    start_locked(dir);
    return MPI_SUCCESS;
}

int stop() {
    read_environment_once();
    flush_all();
    std::lock_guard<std::mutex> lock(state_mutex);
    start_locked("");
    return MPI_SUCCESS;
}

void before(Context &ctx, const char *collective, const std::vector<int64_t> &row, int64_t type_size,
            const char *requested, Call *call) {
    // A plan started after its communicator was freed: the recording there ended with the free,
    // the last collective on it, and no later one could agree a window.
    if (ctx.retired()) return;
    const uint64_t gen = generation.load();
    RecorderPtr &recorder = ctx.recorder();
    if (!recorder || recorder->generation() != gen) {
        std::string dir;
        {
            std::lock_guard<std::mutex> lock(state_mutex);
            dir = state_dir;
        }
        recorder.reset();  // a recording of an earlier start ends here (flushed when it stopped)
        recorder.reset(new Recorder(ctx, gen, dir));
    }
    recorder->before(collective, row, type_size, requested, call);
}

void make_room(Context &ctx) {
    if (ctx.recorder() && ctx.recorder()->generation() == generation.load()) ctx.recorder()->agree_if_full();
}

void after(Context &ctx, const Call &call, const CallStats &stats, int rc) {
    if (!call.on || !ctx.recorder()) return;
    const double ended = MPI_Wtime();
    ctx.recorder()->completed(call, stats, rc);
    // Every rank's window fills at the same call: the agreement is collective.
    ctx.recorder()->agree_if_full();
    if (ctx.rank() == 0) ctx.recorder()->add_overhead(MPI_Wtime() - ended);
}

void completed(Context &ctx, const Call &call, const CallStats &stats, int rc) {
    if (call.on && ctx.recorder()) ctx.recorder()->completed(call, stats, rc);
}

}  // namespace tucoll::record
