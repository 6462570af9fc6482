#include "core/context.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <string>

#include "core/errors.h"
#include "core/platform.h"
#include "core/spec.h"

namespace tucoll {

int delete_context(MPI_Comm comm, int keyval, void *attr, void *extra);
int cleanup_at_finalize(MPI_Comm comm, int keyval, void *attr, void *extra);

namespace {

std::mutex registry_mutex;                              // guards the keyvals' creation and live_contexts
std::atomic<int> context_keyval{MPI_KEYVAL_INVALID};   // attribute holding a Context* on user communicators
int cleanup_keyval = MPI_KEYVAL_INVALID;                // attribute on MPI_COMM_SELF, deleted first at Finalize
std::map<uint64_t, MPI_Comm> live_contexts;             // user communicators with a context, by creation order
std::atomic<uint64_t> contexts_created{0};

}  // namespace

int cleanup_at_finalize(MPI_Comm, int, void *, void *) {
    // MPI_Finalize deletes MPI_COMM_SELF's attributes before anything else; contexts that are
    // still alive (on MPI_COMM_WORLD, or on communicators never freed) release their private
    // communicators here, while MPI is still fully usable. They go in the order they were
    // created — the same on every rank, since creating one is collective — because releasing
    // one may be collective too (MPI_Win_free). (SimGrid's SMPI reports itself finalized at
    // this point and accepts no more calls: the contexts then end with the process.)
    engine::stop_progress_thread();  // before the contexts whose operations it advances
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return MPI_SUCCESS;
    std::map<uint64_t, MPI_Comm> remaining;
    {
        std::lock_guard<std::mutex> lock(registry_mutex);
        remaining.swap(live_contexts);
    }
    for (const auto &entry : remaining) MPI_Comm_delete_attr(entry.second, context_keyval.load());
    std::lock_guard<std::mutex> lock(registry_mutex);
    int keyval = context_keyval.exchange(MPI_KEYVAL_INVALID);
    MPI_Comm_free_keyval(&keyval);
    MPI_Comm_free_keyval(&cleanup_keyval);
    cleanup_keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
}

namespace {

int ensure_keyvals() {
    std::lock_guard<std::mutex> lock(registry_mutex);
    if (context_keyval.load() != MPI_KEYVAL_INVALID) return MPI_SUCCESS;
    int keyval = MPI_KEYVAL_INVALID;
    TUCOLL_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_context, &keyval, nullptr));
    TUCOLL_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, cleanup_at_finalize, &cleanup_keyval, nullptr));
    TUCOLL_MPI(MPI_Comm_set_attr(MPI_COMM_SELF, cleanup_keyval, nullptr));
    context_keyval.store(keyval);  // published last: peek() reads it without the lock
    return MPI_SUCCESS;
}

// MPICH 4.0 with ch4:ucx and UCX 1.13 or newer (Debian 12 pairs 4.0.2 with 1.13.1) sets the base
// of a window from MPI_Win_allocate wrongly, so puts land at the wrong place when ranks put into
// each other at once (fixed by pmodels/mpich#6140, merged for 4.1; NWChem works around it the same
// way, with MPI_Win_create). A two-rank program of one MPI_Put each way shows it there, and passes
// with MPI_Win_create and with MPICH 5.0.2. Every MPICH 4.0.x gets the workaround.
bool win_allocate_misplaces_puts() {
    static const bool affected = [] {
        char text[MPI_MAX_LIBRARY_VERSION_STRING] = "";
        int length = 0;
        if (MPI_Get_library_version(text, &length) != MPI_SUCCESS) return false;
        int major = 0, minor = 0;
        if (std::sscanf(text, "MPICH Version: %d.%d", &major, &minor) < 2) return false;
        return major == 4 && minor == 0;
    }();
    return affected;
}

// TUCOLL_PPN: ranks per node to pretend, 0 when unset.
int env_ppn(int *out) {
    const char *text = std::getenv("TUCOLL_PPN");
    *out = 0;
    if (text == nullptr || *text == '\0') return MPI_SUCCESS;
    long value = 0;
    if (!parse_value(text, &value) || value <= 0 || value > (1L << 30)) {
        return failf(MPI_ERR_ARG, "TUCOLL_PPN=%s is not a positive integer", text);
    }
    *out = static_cast<int>(value);
    return MPI_SUCCESS;
}

}  // namespace

int delete_context(MPI_Comm, int, void *attr, void *) {
    auto *ctx = static_cast<Context *>(attr);
    {
        std::lock_guard<std::mutex> lock(registry_mutex);
        live_contexts.erase(ctx->created_);
    }
    if (ctx->retire()) delete ctx;
    return MPI_SUCCESS;
}

namespace {
std::atomic<uint64_t> scratch_allocations{0};
std::atomic<int> failing_allocations{0};
}  // namespace

uint64_t ScratchBuffer::allocations() { return scratch_allocations.load(); }
void ScratchBuffer::fail_next_allocations(int count) { failing_allocations = count; }

ScratchBuffer::~ScratchBuffer() { platform::release(data_); }

char *ScratchBuffer::get(size_t bytes) {
    if (bytes <= capacity_ && data_ != nullptr) return data_;
    platform::release(data_);
    data_ = nullptr;
    capacity_ = 0;
    if (failing_allocations > 0 && failing_allocations-- > 0) return nullptr;
    ++scratch_allocations;
    const size_t rounded = std::max<size_t>(64, (bytes + 63) / 64 * 64);
    data_ = static_cast<char *>(platform::allocate(rounded));
    if (data_ != nullptr) capacity_ = rounded;
    return data_;
}

bool Context::retire() {
    // What was started on the communicator completes first; nonblocking calls the program still
    // holds stop referring to the context (their wait finds them complete).
    quiesce();
    std::vector<tucoll_plan *> plans;
    for (tucoll_plan *request : live_requests_) {
        if (request->persistent()) {
            plans.push_back(request);
        } else {
            request->orphaned = true;
        }
    }
    live_requests_.swap(plans);
    // The recording agrees on its last calls (collective) and writes its manifest. The window
    // goes now too: MPI_Win_free is collective, and the last plan's free, where the context
    // may end, is local. (No persistent collective uses the window.)
    recorder_.reset();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) release_window();
    user_ = MPI_COMM_NULL;
    retired_ = true;
    return live_requests_.empty();
}

Context::~Context() {
    retire();  // once more where a failed creation or the last plan's free ends the context
    release_scratch();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    // The private communicators are freed at the user's MPI_Comm_free, or at the free of the
    // last plan that outlived it: both MPIs the project supports free a communicator locally,
    // as they do when their own persistent requests end a freed communicator's life.
    if (node_comm_ != MPI_COMM_NULL) MPI_Comm_free(&node_comm_);
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void Context::release_window() {
    if (window_ != MPI_WIN_NULL) MPI_Win_free(&window_);
    if (window_memory_ != nullptr) MPI_Free_mem(window_memory_);
    window_memory_ = nullptr;
    window_base_ = nullptr;
    window_bytes_ = 0;
}

int Context::node_comm(MPI_Comm *out) {
    if (node_comm_ == MPI_COMM_NULL) {
        quiesce();
        TUCOLL_MPI(MPI_Comm_split(comm_, topo_.node, topo_.local_rank, &node_comm_));
        TUCOLL_MPI(MPI_Comm_set_errhandler(node_comm_, MPI_ERRORS_RETURN));
    }
    *out = node_comm_;
    return MPI_SUCCESS;
}

int Context::window(size_t bytes, MPI_Win *win, char **base) {
    if (window_ == MPI_WIN_NULL || window_bytes_ < bytes) {
        quiesce();
        release_window();
        const size_t size = std::max<size_t>(bytes, 1);
        if (win_allocate_misplaces_puts()) {
            TUCOLL_MPI(MPI_Alloc_mem(static_cast<MPI_Aint>(size), MPI_INFO_NULL, &window_memory_));
            window_base_ = static_cast<char *>(window_memory_);
            const int rc = MPI_Win_create(window_base_, static_cast<MPI_Aint>(size), 1, MPI_INFO_NULL, comm_, &window_);
            if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Win_create");
        } else {
            // MPI allocates the memory so that it can use shared memory (Open MPI's osc/sm, which
            // serves MPI_Win_allocate on one node but not MPI_Win_create) or registered buffers.
            TUCOLL_MPI(MPI_Win_allocate(static_cast<MPI_Aint>(size), 1, MPI_INFO_NULL, comm_, &window_base_, &window_));
        }
        TUCOLL_MPI(MPI_Win_set_errhandler(window_, MPI_ERRORS_RETURN));
        // Zeroed before its first fence: users of the window (rma's arrival flags) rely on it.
        std::memset(window_base_, 0, size);
        window_bytes_ = size;
    }
    *win = window_;
    *base = window_base_;
    return MPI_SUCCESS;
}

Context *Context::peek(MPI_Comm comm) {
    const int keyval = context_keyval.load();
    if (comm == MPI_COMM_NULL || keyval == MPI_KEYVAL_INVALID) return nullptr;
    void *attr = nullptr;
    int found = 0;
    if (MPI_Comm_get_attr(comm, keyval, &attr, &found) != MPI_SUCCESS || !found) return nullptr;
    return static_cast<Context *>(attr);
}

int Context::get(MPI_Comm comm, Context **out) {
    *out = nullptr;
    if (comm == MPI_COMM_NULL) return fail(MPI_ERR_COMM, "communicator is MPI_COMM_NULL");
    if (Context *existing = peek(comm)) {
        *out = existing;
        return MPI_SUCCESS;
    }
    int inter = 0;
    TUCOLL_MPI(MPI_Comm_test_inter(comm, &inter));
    if (inter) return fail(MPI_ERR_COMM, "intercommunicators are not supported");
    TUCOLL_TRY(ensure_keyvals());
    auto *ctx = new (std::nothrow) Context();
    if (ctx == nullptr) return fail(MPI_ERR_NO_MEM, "cannot allocate a communicator context");
    int rc = ctx->init(comm);
    if (rc != MPI_SUCCESS) {
        delete ctx;
        return rc;
    }
    ctx->created_ = contexts_created++;
    {
        std::lock_guard<std::mutex> lock(registry_mutex);
        live_contexts.emplace(ctx->created_, comm);
    }
    rc = MPI_Comm_set_attr(comm, context_keyval.load(), ctx);
    if (rc != MPI_SUCCESS) {
        delete_context(comm, context_keyval.load(), ctx, nullptr);
        return mpi_fail(rc, "MPI_Comm_set_attr");
    }
    *out = ctx;
    return MPI_SUCCESS;
}

int Context::init(MPI_Comm user) {
    user_ = user;
    TUCOLL_MPI(MPI_Comm_dup(user, &comm_));
    TUCOLL_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    TUCOLL_MPI(MPI_Comm_rank(comm_, &rank_));
    TUCOLL_MPI(MPI_Comm_size(comm_, &size_));
    log_choices_ = rank_ == 0 && verbose();
    int ppn = 0;
    int rc = env_ppn(&ppn);
    // Every rank takes part in the topology exchange even when its TUCOLL_PPN is malformed, so
    // that no rank is left waiting; the error is reported afterwards.
    int rc2 = compute_topology(rc == MPI_SUCCESS ? ppn : 0, ppn > 0 ? Topology::kEnv : Topology::kSplitType);
    return rc != MPI_SUCCESS ? rc : rc2;
}

int Context::set_ppn(int ppn) {
    quiesce();  // outstanding schedules were planned on the old topology
    int bounds[2] = {ppn, -ppn};
    TUCOLL_MPI(MPI_Allreduce(MPI_IN_PLACE, bounds, 2, MPI_INT, MPI_MAX, comm_));
    if (bounds[0] != -bounds[1]) {
        return failf(MPI_ERR_ARG, "tucoll_comm_set_ppn: ranks passed different values (%d .. %d)",
                     -bounds[1], bounds[0]);
    }
    if (ppn < 0) return failf(MPI_ERR_ARG, "tucoll_comm_set_ppn: ppn=%d is negative", ppn);
    if (ppn > 0) return compute_topology(ppn, Topology::kApi);
    int env = 0;
    TUCOLL_TRY(env_ppn(&env));
    return compute_topology(env, env > 0 ? Topology::kEnv : Topology::kSplitType);
}

int Context::set_node(int node_id) {
    if (node_id < 0) return failf(MPI_ERR_ARG, "tucoll_comm_set_node: node id %d is negative", node_id);
    quiesce();
    return topology_from_node_ids(node_id, 0, Topology::kNodeIds);
}

int Context::compute_topology(int requested_ppn, Topology::Source source) {
    if (requested_ppn > 0) return topology_from_node_ids(rank_ / requested_ppn, requested_ppn, source);
    // A node is named by its lowest rank; topology_from_node_ids numbers nodes from there.
    MPI_Comm node_comm = MPI_COMM_NULL;
    TUCOLL_MPI(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_comm));
    int lowest = rank_;
    const int rc = MPI_Allreduce(&rank_, &lowest, 1, MPI_INT, MPI_MIN, node_comm);
    MPI_Comm_free(&node_comm);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Allreduce");
    return topology_from_node_ids(lowest, 0, source);
}

int Context::topology_from_node_ids(int my_node_id, int requested_ppn, Topology::Source source) {
    // Each rank contributes (node id, its requested ppn) so that a TUCOLL_PPN set differently on
    // different ranks is caught before it can make ranks disagree about the schedule. PMPI: under
    // the interposer (libtucoll_preload) MPI_Allgather would come back into tucoll.
    int mine[2] = {my_node_id, requested_ppn};
    std::vector<int> all(2 * static_cast<size_t>(size_));
    TUCOLL_MPI(PMPI_Allgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, comm_));
    for (int r = 0; r < size_; ++r) {
        if (all[2 * r + 1] != requested_ppn) {
            return failf(MPI_ERR_ARG, "ranks per node differ between ranks (%d on rank %d, %d on rank %d); "
                         "set TUCOLL_PPN identically everywhere", requested_ppn, rank_, all[2 * r + 1], r);
        }
    }
    Topology t;
    t.source = source;
    t.node_of.resize(size_);
    t.local_rank_of.resize(size_);
    // Nodes are numbered in the order of their lowest rank, whatever ids the ranks gave.
    std::map<int, int> index_of_id;
    std::vector<int> node_sizes;
    for (int r = 0; r < size_; ++r) {
        auto [it, added] = index_of_id.emplace(all[2 * r], static_cast<int>(node_sizes.size()));
        if (added) node_sizes.push_back(0);
        t.node_of[r] = it->second;
        t.local_rank_of[r] = node_sizes[it->second]++;
    }
    t.num_nodes = static_cast<int>(node_sizes.size());
    t.node = t.node_of[rank_];
    t.local_rank = t.local_rank_of[rank_];
    t.local_size = node_sizes[t.node];
    t.max_local_size = *std::max_element(node_sizes.begin(), node_sizes.end());
    const bool equal = std::all_of(node_sizes.begin(), node_sizes.end(), [&](int n) { return n == node_sizes[0]; });
    t.ppn = equal ? node_sizes[0] : 0;
    t.regular = equal;
    for (int r = 0; r < size_ && t.regular; ++r) t.regular = (t.node_of[r] == r / t.ppn);
    t.node_first.assign(t.num_nodes + 1, 0);
    for (int n = 0; n < t.num_nodes; ++n) t.node_first[n + 1] = t.node_first[n] + node_sizes[n];
    t.node_ranks.resize(size_);
    for (int r = 0; r < size_; ++r) t.node_ranks[t.node_first[t.node_of[r]] + t.local_rank_of[r]] = r;
    topo_ = std::move(t);
    if (node_comm_ != MPI_COMM_NULL) TUCOLL_MPI(MPI_Comm_free(&node_comm_));  // nodes changed
    return MPI_SUCCESS;
}

int Context::select(const RegistryBase &registry, const char *explicit_spec, const Selection **out) {
    const bool given = explicit_spec != nullptr && *explicit_spec != '\0';
    const char *env = given ? nullptr : std::getenv(registry.env_var());
    const char *text = given ? explicit_spec : env != nullptr && *env != '\0' ? env : registry.default_spec();
    for (const CachedSelection &c : selections_) {
        if (c.registry == &registry && c.explicit_spec == given && c.text == text) {
            *out = &c.selection;
            return MPI_SUCCESS;
        }
    }
    Selection sel;
    TUCOLL_TRY(select_algorithm(registry, explicit_spec, scope(), &sel));
    // A job-wide choice adjusted to this communicator is said once, by its first rank.
    if (!sel.note.empty() && rank_ == 0 && verbose()) log_line(sel.note);
    selections_.push_back({&registry, given, text, std::move(sel)});
    *out = &selections_.back().selection;
    return MPI_SUCCESS;
}

CallStats &Context::begin_call(const char *collective) {
    active_->stats().reset(collective);
    active_->requests().begin(calls_++, comm_, &topo_.node_of, topo_.node);
    return active_->stats();
}

FramePool &frame_pool(Context &ctx) { return ctx.frames(); }

void Context::log_choice(const CallStats &stats) {
    // The interposer logs each MPI call under its own name instead (tucoll_set_choice_log).
    if (!choice_log_enabled() || !logged_.insert(stats.collective + " " + stats.algorithm).second) return;
    char name[MPI_MAX_OBJECT_NAME] = "";
    int length = 0;
    if (user_ != MPI_COMM_NULL) MPI_Comm_get_name(user_, name, &length);
    log_line(stats.collective + " on " + (length > 0 ? name : "a communicator") + " (P=" + std::to_string(size_) +
             "): " + stats.algorithm + " (" + stats.path + ")");
}

void Context::publish_copy(const CallStats &stats) {
    completed_stats_ = stats;
    last_stats_ = &completed_stats_;
}

void Context::release_scratch() {
    quiesce();  // their scratch is what is released
    blocking_.scratch().clear();
    idle_pending_.clear();
    state_.clear();
}

Pending *Context::acquire_pending() {
    Pending *call = nullptr;
    if (idle_pending_.empty()) {
        call = new (std::nothrow) Pending(*this);
        if (call == nullptr) return nullptr;
    } else {
        call = idle_pending_.back().release();
        idle_pending_.pop_back();
    }
    if (adopt_request(call) != MPI_SUCCESS) {
        delete call;
        return nullptr;
    }
    return call;
}

void Context::release_pending(Pending *call) {
    forget_request(call);
    try {
        idle_pending_.emplace_back(call);
    } catch (...) {
        delete call;
    }
}

int Context::adopt_request(tucoll_plan *request) {
    try {
        live_requests_.push_back(request);
    } catch (...) {
        return fail(MPI_ERR_NO_MEM, "no memory for the request");
    }
    return MPI_SUCCESS;
}

void Context::forget_request(tucoll_plan *request) {
    // The most recent is the likeliest: requests are mostly completed in the order they start.
    auto it = std::find(live_requests_.rbegin(), live_requests_.rend(), request);
    if (it != live_requests_.rend()) live_requests_.erase(std::next(it).base());
    if (retired_ && live_requests_.empty()) delete this;  // the last plan that outlived the communicator
}

}  // namespace tucoll
