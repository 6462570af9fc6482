#include "core/registry.h"

#include <mpi.h>

#include <algorithm>
#include <limits>

#include "core/errors.h"

namespace tucoll {

long Bound::eval(const Scope &scope) const {
    switch (kind_) {
        case Kind::kConstant: return value_;
        case Kind::kProcs: return scope.nprocs + value_;
        case Kind::kLocal: return scope.ppn + value_;
        case Kind::kNodes: return scope.nodes() + value_;
        case Kind::kRemote: return scope.nprocs - scope.ppn + value_;
        case Kind::kUnbounded: break;
    }
    return std::numeric_limits<long>::max();
}

const char *Bound::of() const {
    switch (kind_) {
        case Kind::kConstant: return "const";
        case Kind::kProcs: return "P";
        case Kind::kLocal: return "Q";
        case Kind::kNodes: return "N";
        case Kind::kRemote: return "P-Q";
        case Kind::kUnbounded: break;
    }
    return "inf";
}

const char *grid_name(Grid grid) {
    switch (grid) {
        case Grid::kRadix: return "radix";
        case Grid::kBatch: return "batch";
        case Grid::kNodeBatch: return "node-batch";
        case Grid::kChoices: return "choices";
        case Grid::kDefault: return "default";
        case Grid::kValues: break;
    }
    return "values";
}

int64_t concurrent_flows(const AlgorithmInfo &alg, const Params &params, const Scope &scope) {
    const int64_t per_rank = alg.flows_per_rank ? alg.flows_per_rank(params, scope) : 1;
    return per_rank < 0 ? -1 : static_cast<int64_t>(scope.nprocs) * per_rank;
}

std::string Bound::str() const {
    auto with_offset = [this](const char *base) {
        if (value_ == 0) return std::string(base);
        return std::string(base) + (value_ > 0 ? "+" : "") + std::to_string(value_);
    };
    switch (kind_) {
        case Kind::kConstant: return std::to_string(value_);
        case Kind::kProcs: return with_offset("P");
        case Kind::kLocal: return with_offset("Q");
        case Kind::kNodes: return with_offset("N");
        case Kind::kRemote: return with_offset("P-Q");
        case Kind::kUnbounded: break;
    }
    return "inf";
}

void Params::set(const std::string &name, long value) {
    for (auto &kv : items_) {
        if (kv.first == name) {
            kv.second = value;
            return;
        }
    }
    items_.emplace_back(name, value);
}

long Params::get(std::string_view name) const {
    for (const auto &kv : items_) {
        if (kv.first == name) return kv.second;
    }
    return 0;
}

std::string spec_string(const AlgorithmInfo &alg, const Params &params) {
    std::string out;
    for (const auto &kv : params.items()) {
        out += out.empty() ? ':' : ',';
        out += kv.first + '=';
        const auto p = std::find_if(alg.params.begin(), alg.params.end(),
                                    [&](const ParamSpec &ps) { return ps.name == kv.first; });
        const bool named = p != alg.params.end() && kv.second >= 0 &&
                           kv.second < static_cast<long>(p->choices.size());
        out += named ? p->choices[kv.second] : std::to_string(kv.second);
    }
    return alg.name + out;
}

int resolve_params(const AlgorithmInfo &alg, const Spec &spec, const Scope &scope, Params *out,
                   std::string *clamped) {
    if (clamped != nullptr) clamped->clear();
    // Names of choices become their numbers first.
    Spec numeric = spec;
    for (const auto &kw : spec.words) {
        const auto p = std::find_if(alg.params.begin(), alg.params.end(),
                                    [&](const ParamSpec &ps) { return ps.name == kw.first; });
        if (p == alg.params.end()) {
            numeric.values.emplace_back(kw.first, 0);  // reported as unknown below
            continue;
        }
        const auto c = std::find(p->choices.begin(), p->choices.end(), kw.second);
        if (c == p->choices.end()) {
            std::string accepted;
            for (const std::string &name : p->choices) accepted += (accepted.empty() ? "" : "|") + name;
            return failf(MPI_ERR_ARG, "%s: %s=%s is not one of %s", alg.name.c_str(), kw.first.c_str(),
                         kw.second.c_str(), accepted.empty() ? "its values (it takes a number)" : accepted.c_str());
        }
        numeric.values.emplace_back(kw.first, static_cast<long>(c - p->choices.begin()));
    }
    for (const auto &kv : numeric.values) {
        bool known = std::any_of(alg.params.begin(), alg.params.end(),
                                 [&](const ParamSpec &p) { return p.name == kv.first; });
        if (!known) {
            std::string accepted;
            for (const ParamSpec &p : alg.params) accepted += (accepted.empty() ? "" : ", ") + p.name;
            return failf(MPI_ERR_ARG, "%s: unknown parameter \"%s\" (accepted: %s)", alg.name.c_str(),
                         kv.first.c_str(), accepted.empty() ? "none" : accepted.c_str());
        }
    }
    Params params;
    for (const ParamSpec &p : alg.params) {
        long value = p.default_value;
        bool given = false;
        for (const auto &kv : numeric.values) {
            if (kv.first == p.name) {
                value = kv.second;
                given = true;
            }
        }
        long lo = p.min.eval(scope);
        // A range whose upper end falls below its lower end (radix in [2, P] at P = 1) collapses
        // to its lower end.
        long hi = std::max(lo, p.max.eval(scope));
        if (given && (value < lo || value > hi) && clamped != nullptr) {
            *clamped += (clamped->empty() ? "" : ", ") + p.name + "=" + std::to_string(value) + " is out of range [" +
                        std::to_string(lo) + ", " + (p.max.is_unbounded() ? "inf" : std::to_string(hi)) + "]";
        } else if (given && (value < lo || value > hi)) {
            return failf(MPI_ERR_ARG, "%s: %s=%ld is out of range [%s, %s] = [%ld, %s] for P=%d, Q=%d",
                         alg.name.c_str(), p.name.c_str(), value, p.min.str().c_str(),
                         p.max.str().c_str(), lo,
                         p.max.is_unbounded() ? "inf" : std::to_string(hi).c_str(), scope.nprocs,
                         scope.ppn);
        }
        // Defaults are clamped into the range so that they are valid at every P.
        params.set(p.name, std::clamp(value, lo, hi));
    }
    *out = std::move(params);
    return MPI_SUCCESS;
}

size_t RegistryBase::find_index(std::string_view name) const {
    for (size_t i = 0; i < size(); ++i) {
        if (info(i).name == name) return i;
    }
    return npos;
}

const AlgorithmInfo *RegistryBase::find_info(std::string_view name) const {
    const size_t i = find_index(name);
    return i == npos ? nullptr : &info(i);
}

std::string RegistryBase::names() const {
    std::string out;
    for (size_t i = 0; i < size(); ++i) out += (i ? ", " : "") + info(i).name;
    return out;
}

namespace {

int resolve(const RegistryBase &registry, const char *text, const Scope &scope, bool lenient, Selection *out) {
    Spec spec;
    TUCOLL_TRY(parse_spec(text, &spec));
    const size_t index = registry.find_index(spec.name);
    if (index == RegistryBase::npos) {
        return failf(MPI_ERR_ARG, "unknown %s algorithm \"%s\" (registered: %s)", registry.collective(),
                     spec.name.c_str(), registry.names().c_str());
    }
    const AlgorithmInfo &alg = registry.info(index);
    Selection sel;
    sel.index = index;
    std::string clamped;
    TUCOLL_TRY(resolve_params(alg, spec, scope, &sel.params, lenient ? &clamped : nullptr));
    sel.spec = spec_string(alg, sel.params);
    if (!clamped.empty()) {
        sel.note = std::string(text) + ": " + clamped + " on a communicator of P=" + std::to_string(scope.nprocs) +
                   ", Q=" + std::to_string(scope.ppn) + "; it runs " + sel.spec;
    }
    *out = std::move(sel);
    return MPI_SUCCESS;
}

}  // namespace

int resolve_spec(const RegistryBase &registry, const char *text, const Scope &scope, Selection *out) {
    return resolve(registry, text, scope, false, out);
}

int select_algorithm(const RegistryBase &registry, const char *explicit_spec, const char *environment_spec,
                     const Scope &scope, Selection *out) {
    const char *source = "call";
    const char *text = explicit_spec;
    if (text == nullptr || *text == '\0') {
        text = environment_spec;
        source = registry.env_var();
    }
    if (text == nullptr || *text == '\0') {
        text = registry.default_spec();
        source = "default";
    }
    const bool from_call = source == std::string_view("call");
    int rc = resolve(registry, text, scope, !from_call, out);
    if (rc != MPI_SUCCESS && !from_call) {
        return prefix_error(rc, {source == std::string_view("default") ? "built-in default" : source, "=", text, ": "});
    }
    if (!out->note.empty()) out->note = std::string(source) + "=" + out->note;
    out->source = source;
    return rc;
}

const RegistryBase *registry_for(std::string_view collective) {
    for (const RegistryBase *r : all_registries()) {
        if (collective == r->collective()) return r;
    }
    return nullptr;
}

}  // namespace tucoll
