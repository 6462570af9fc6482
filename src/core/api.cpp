// C entry points of the core: errors, statistics, registry introspection, communicator settings.
#include <algorithm>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "core/context.h"
#include "core/errors.h"
#include "core/record.h"
#include "core/registry.h"
#include "core/spec.h"
#include "tucoll.h"

namespace {

void copy_string(char *dst, size_t capacity, const std::string &src) {
    std::strncpy(dst, src.c_str(), capacity - 1);
    dst[capacity - 1] = '\0';
}

nlohmann::ordered_json registry_as_json() {
    nlohmann::ordered_json collectives = nlohmann::ordered_json::object();
    for (const tucoll::RegistryBase *reg : tucoll::all_registries()) {
        nlohmann::ordered_json algorithms = nlohmann::ordered_json::array();
        for (size_t i = 0; i < reg->size(); ++i) {
            const tucoll::AlgorithmInfo &alg = reg->info(i);
            nlohmann::ordered_json params = nlohmann::ordered_json::array();
            auto bound = [](const tucoll::Bound &b) { return nlohmann::ordered_json{{"of", b.of()}, {"plus", b.offset()}}; };
            for (const tucoll::ParamSpec &p : alg.params) {
                params.push_back({{"name", p.name},
                                  {"min", p.min.str()},
                                  {"max", p.max.str()},
                                  {"default", p.default_value},
                                  {"doc", p.doc},
                                  {"grid", tucoll::grid_name(p.grid)},
                                  {"choices", p.choices},
                                  {"bounds", {{"min", bound(p.min)}, {"max", bound(p.max)}, {"span", bound(p.span)}}}});
            }
            algorithms.push_back({{"name", alg.name},
                                  {"summary", alg.summary},
                                  {"constraints", alg.constraints},
                                  {"meta", alg.meta},
                                  {"reduces_max_block", alg.uses_max_block != nullptr},
                                  {"skips_empty_blocks", alg.skips_empty_blocks},
                                  {"params", params}});
        }
        collectives[reg->collective()] = {
            {"env", reg->env_var()}, {"default", reg->default_spec()}, {"algorithms", algorithms}};
    }
    return {{"version", std::to_string(TUCOLL_VERSION_MAJOR) + "." + std::to_string(TUCOLL_VERSION_MINOR) + "." +
                            std::to_string(TUCOLL_VERSION_PATCH)},
            {"collectives", collectives}};
}

}  // namespace

extern "C" const char *tucoll_error_string(int errcode) { return tucoll::error_string(errcode); }

extern "C" void tucoll_set_choice_log(int on) { tucoll::set_choice_log(on != 0); }

extern "C" int tucoll_get_stats(MPI_Comm comm, tucoll_stats_t *out) {
    if (out == nullptr) return tucoll::fail(MPI_ERR_ARG, "tucoll_get_stats: stats is NULL");
    tucoll::Context *ctx = tucoll::Context::peek(comm);
    tucoll::EngineLock lock;  // a progress thread publishes what completes
    if (ctx == nullptr || !ctx->has_stats()) {
        return tucoll::fail(MPI_ERR_OTHER, "tucoll_get_stats: no tucoll call has completed on this communicator");
    }
    const tucoll::CallStats &s = ctx->last_stats();
    std::memset(out, 0, sizeof *out);
    copy_string(out->collective, sizeof out->collective, s.collective);
    copy_string(out->algorithm, sizeof out->algorithm, s.algorithm);
    copy_string(out->path, sizeof out->path, s.path);
    out->rounds = s.rounds;
    out->messages = s.messages;
    out->bytes_sent = s.bytes_sent;
    out->temp_bytes = s.temp_bytes;
    out->scratch_bytes = s.scratch_bytes;
    out->pack_bytes = s.pack_bytes;
    out->staging_bytes = s.staging_bytes;
    out->inter_region_messages = s.inter_region_messages;
    return MPI_SUCCESS;
}

extern "C" int tucoll_num_algorithms(const char *collective) {
    const tucoll::RegistryBase *reg = collective ? tucoll::registry_for(collective) : nullptr;
    return reg ? static_cast<int>(reg->size()) : -1;
}

extern "C" const char *tucoll_algorithm_name(const char *collective, int index) {
    const tucoll::RegistryBase *reg = collective ? tucoll::registry_for(collective) : nullptr;
    if (reg == nullptr || index < 0 || static_cast<size_t>(index) >= reg->size()) return nullptr;
    return reg->info(index).name.c_str();
}

extern "C" const char *tucoll_algorithm_params(const char *collective, const char *algorithm) {
    const tucoll::RegistryBase *reg = collective ? tucoll::registry_for(collective) : nullptr;
    const tucoll::AlgorithmInfo *alg = reg && algorithm ? reg->find_info(algorithm) : nullptr;
    if (alg == nullptr) return nullptr;
    thread_local std::string text;
    text.clear();
    for (const tucoll::ParamSpec &p : alg->params) {
        text += p.name + " in [" + p.min.str() + ", " + p.max.str() + "], default " +
                std::to_string(p.default_value) + ": " + p.doc + "\n";
    }
    return text.c_str();
}

extern "C" const char *tucoll_registry_json(void) {
    static const std::string json = registry_as_json().dump(2);
    return json.c_str();
}

extern "C" int tucoll_spec_parse(const char *spec, const char **json) {
    if (spec == nullptr || json == nullptr) return tucoll::fail(MPI_ERR_ARG, "tucoll_spec_parse: spec or result is NULL");
    *json = nullptr;
    tucoll::Spec parsed;
    TUCOLL_TRY(tucoll::parse_spec(spec, &parsed));
    nlohmann::ordered_json params = nlohmann::ordered_json::object();
    for (const auto &[key, value] : parsed.values) params[key] = value;
    for (const auto &[key, word] : parsed.words) params[key] = word;
    thread_local std::string text;
    text = nlohmann::ordered_json{{"name", parsed.name}, {"params", params}}.dump();
    *json = text.c_str();
    return MPI_SUCCESS;
}

extern "C" int tucoll_check_spec(const char *collective, const char *spec, int nprocs) {
    const tucoll::RegistryBase *reg = collective ? tucoll::registry_for(collective) : nullptr;
    if (reg == nullptr) return tucoll::failf(MPI_ERR_ARG, "unknown collective \"%s\"", collective ? collective : "(null)");
    if (spec == nullptr) return tucoll::fail(MPI_ERR_ARG, "spec is NULL");
    if (nprocs < 1) return tucoll::failf(MPI_ERR_ARG, "nprocs=%d must be positive", nprocs);
    tucoll::Selection sel;
    return tucoll::resolve_spec(*reg, spec, tucoll::Scope{nprocs, nprocs}, &sel);
}

namespace {

// The scope of a query: P ranks, Q per node (0: one node).
int query_scope(const char *fn, int nprocs, int ppn, tucoll::Scope *out) {
    if (nprocs < 1) return tucoll::failf(MPI_ERR_ARG, "%s: nprocs=%d must be positive", fn, nprocs);
    if (ppn < 0) return tucoll::failf(MPI_ERR_ARG, "%s: ppn=%d is negative", fn, ppn);
    *out = tucoll::Scope{nprocs, ppn == 0 || ppn > nprocs ? nprocs : ppn};
    return MPI_SUCCESS;
}

const tucoll::RegistryBase *query_registry(const char *fn, const char *collective) {
    const tucoll::RegistryBase *reg = collective ? tucoll::registry_for(collective) : nullptr;
    if (reg == nullptr) tucoll::failf(MPI_ERR_ARG, "%s: unknown collective \"%s\"", fn, collective ? collective : "(null)");
    return reg;
}

}  // namespace

extern "C" int tucoll_spec_properties(const char *collective, const char *spec, int nprocs, int ppn,
                                      tucoll_spec_properties_t *out) {
    constexpr const char *fn = "tucoll_spec_properties";
    if (out == nullptr || spec == nullptr) return tucoll::failf(MPI_ERR_ARG, "%s: spec or result is NULL", fn);
    const tucoll::RegistryBase *reg = query_registry(fn, collective);
    if (reg == nullptr) return MPI_ERR_ARG;
    tucoll::Scope scope;
    TUCOLL_TRY(query_scope(fn, nprocs, ppn, &scope));
    tucoll::Selection sel;
    TUCOLL_TRY(tucoll::resolve_spec(*reg, spec, scope, &sel));
    const tucoll::AlgorithmInfo &alg = reg->info(sel.index);
    std::memset(out, 0, sizeof *out);
    copy_string(out->canonical, sizeof out->canonical, sel.spec);
    out->concurrent_flows = tucoll::concurrent_flows(alg, sel.params, scope);
    out->uses_max_block = alg.uses_max_block != nullptr && alg.uses_max_block(sel.params, scope) ? 1 : 0;
    out->meta = alg.meta ? 1 : 0;
    return MPI_SUCCESS;
}

extern "C" int tucoll_param_range(const char *collective, const char *algorithm, const char *param, int nprocs,
                                  int ppn, long *min, long *max, long *span) {
    constexpr const char *fn = "tucoll_param_range";
    const tucoll::RegistryBase *reg = query_registry(fn, collective);
    if (reg == nullptr) return MPI_ERR_ARG;
    const tucoll::AlgorithmInfo *alg = algorithm ? reg->find_info(algorithm) : nullptr;
    if (alg == nullptr) return tucoll::failf(MPI_ERR_ARG, "%s: unknown algorithm \"%s\"", fn, algorithm ? algorithm : "(null)");
    tucoll::Scope scope;
    TUCOLL_TRY(query_scope(fn, nprocs, ppn, &scope));
    for (const tucoll::ParamSpec &p : alg->params) {
        if (param == nullptr || p.name != param) continue;
        const long lo = p.min.eval(scope);
        const long hi = p.max.is_unbounded() ? -1 : std::max(lo, p.max.eval(scope));
        if (min != nullptr) *min = lo;
        if (max != nullptr) *max = hi;
        if (span != nullptr) *span = p.span.is_unbounded() ? (hi < 0 ? lo : hi) : std::max(lo, p.span.eval(scope));
        return MPI_SUCCESS;
    }
    return tucoll::failf(MPI_ERR_ARG, "%s: %s has no parameter \"%s\"", fn, algorithm, param ? param : "(null)");
}

extern "C" int tucoll_comm_set_ppn(MPI_Comm comm, int ppn) {
    tucoll::Context *ctx = nullptr;
    TUCOLL_TRY(tucoll::Context::get(comm, &ctx));
    return ctx->set_ppn(ppn);
}

extern "C" int tucoll_comm_set_node(MPI_Comm comm, int node_id) {
    tucoll::Context *ctx = nullptr;
    TUCOLL_TRY(tucoll::Context::get(comm, &ctx));
    return ctx->set_node(node_id);
}

extern "C" int tucoll_comm_get_topology(MPI_Comm comm, tucoll_topology_t *out) {
    if (out == nullptr) return tucoll::fail(MPI_ERR_ARG, "tucoll_comm_get_topology: topology is NULL");
    tucoll::Context *ctx = nullptr;
    TUCOLL_TRY(tucoll::Context::get(comm, &ctx));
    const tucoll::Topology &t = ctx->topology();
    out->node = t.node;
    out->local_rank = t.local_rank;
    out->local_size = t.local_size;
    out->num_nodes = t.num_nodes;
    out->ppn = t.ppn;
    out->max_local_size = t.max_local_size;
    out->regular = t.regular ? 1 : 0;
    out->source = static_cast<int>(t.source);
    return MPI_SUCCESS;
}

extern "C" int tucoll_record_start(const char *dir) { return tucoll::record::start(dir); }

extern "C" int tucoll_record_stop(void) { return tucoll::record::stop(); }

extern "C" int tucoll_comm_release_scratch(MPI_Comm comm) try {
    if (tucoll::Context *ctx = tucoll::Context::peek(comm)) {
        ctx->release_scratch();
        ctx->read_settings();
    }
    return MPI_SUCCESS;
} catch (...) {
    return tucoll::fail_from_exception("tucoll_comm_release_scratch");
}
