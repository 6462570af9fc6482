// The context's life (made on a communicator's first tucoll call, retired with it, ended at
// MPI_Finalize in creation order), its selection cache, statistics and requests. Its topology,
// window and scratch buffers have rooms of their own (context_topology.cpp, context_window.cpp,
// scratch.cpp).
#include "core/context.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <string>

#include "core/errors.h"
#include "core/validate.h"

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
    engine::note_thread_level();
    read_settings();
    return init_topology();
}

void Context::read_settings() {
    settings_.global_checks = global_checks_requested();
    settings_.specs.clear();
    for (const RegistryBase *registry : all_registries()) {
        const char *text = std::getenv(registry->env_var());
        if (text != nullptr && *text != '\0') settings_.specs.emplace_back(registry, text);
    }
}

const char *Context::environment_spec(const RegistryBase &registry) const {
    for (const auto &[r, text] : settings_.specs) {
        if (r == &registry) return text.c_str();
    }
    return nullptr;
}

int Context::select(const RegistryBase &registry, const char *explicit_spec, const Selection **out) {
    const bool given = explicit_spec != nullptr && *explicit_spec != '\0';
    const char *env = given ? nullptr : environment_spec(registry);
    const char *text = given ? explicit_spec : env != nullptr ? env : registry.default_spec();
    for (const CachedSelection &c : selections_) {
        if (c.registry == &registry && c.explicit_spec == given && c.text == text) {
            *out = &c.selection;
            return MPI_SUCCESS;
        }
    }
    Selection sel;
    TUCOLL_TRY(select_algorithm(registry, explicit_spec, env, scope(), &sel));
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
    call_scratch_.clear();
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
