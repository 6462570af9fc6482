// One registry per collective: every algorithm is described here once — name, parameters with
// their ranges and defaults, constraints — and the bench, tests, tuner and docs enumerate it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/spec.h"

namespace tucoll {

// What parameter bounds are evaluated against: the communicator the call runs on.
struct Scope {
    int nprocs = 1;  // P
    int ppn = 1;     // Q, ranks per node (largest node when nodes differ)
    int nodes() const { return (nprocs + ppn - 1) / (ppn > 0 ? ppn : 1); }  // N
};

// A bound of a parameter range: a constant or a property of the communicator.
class Bound {
  public:
    static Bound constant(long value) { return Bound(Kind::kConstant, value); }
    static Bound procs(long offset = 0) { return Bound(Kind::kProcs, offset); }        // P + offset
    static Bound local_procs(long offset = 0) { return Bound(Kind::kLocal, offset); }  // Q + offset
    static Bound nodes(long offset = 0) { return Bound(Kind::kNodes, offset); }        // N + offset
    static Bound remote_procs() { return Bound(Kind::kRemote, 0); }                    // P - Q
    static Bound unbounded() { return Bound(Kind::kUnbounded, 0); }

    long eval(const Scope &scope) const;
    std::string str() const;  // "2", "P", "P-1", "Q", "N-1", "P-Q", "inf"
    bool is_unbounded() const { return kind_ == Kind::kUnbounded; }
    // What it is measured from — "const", "P", "Q", "N", "P-Q" or "inf" — and the offset.
    const char *of() const;
    long offset() const { return value_; }

  private:
    enum class Kind { kConstant, kProcs, kLocal, kNodes, kRemote, kUnbounded };
    Bound(Kind kind, long value) : kind_(kind), value_(value) {}
    Kind kind_;
    long value_;
};

// How a parameter's values are sampled when every choice is timed (tucoll sweep): a radix
// (powers of two, steps around the square root of its top, the top), a batch size (powers of two
// below its span, and 0 = all at once), a batch of the inter-node phase (powers of two below the
// number of nodes, and 0: seed 003's grid), every choice of a named parameter, its default alone
// (a threshold measured once per machine, not per workload), or its default and finite bounds.
enum class Grid { kValues, kRadix, kBatch, kNodeBatch, kChoices, kDefault };
const char *grid_name(Grid grid);

struct ParamSpec {
    std::string name;
    Bound min;
    Bound max;
    long default_value;
    std::string doc;
    Grid grid = Grid::kValues;
    // The largest value that behaves differently from all larger ones (a batch of more messages
    // than there are is all of them); unbounded: `max` is.
    Bound span = Bound::unbounded();
    // A parameter that names one of a few ways (copy=kernel|memcpy|hybrid): value i is choices[i],
    // its range [0, n-1], and spec strings spell it by name (a number is accepted too).
    std::vector<std::string> choices = {};
};

// Parameter values of one resolved choice, in registry order, defaults filled in.
class Params {
  public:
    void set(const std::string &name, long value);
    long get(std::string_view name) const;  // registry guarantees presence
    const std::vector<std::pair<std::string, long>> &items() const { return items_; }

  private:
    std::vector<std::pair<std::string, long>> items_;
};

// What every registry entry has, whatever the collective.
struct AlgorithmInfo {
    std::string name;
    std::string summary;      // one line for tables and --help
    std::vector<ParamSpec> params;
    std::string constraints;  // what it needs, and what happens when that does not hold
    // Point-to-point flows one rank keeps in flight at once with these parameters at this scope,
    // -1 when that is not known (the vendor's, dynamic exchanges); nullptr: one, round by round.
    // Simulation tools refuse runs whose concurrent flows would take hours to simulate.
    int64_t (*flows_per_rank)(const Params &params, const Scope &scope) = nullptr;
    // A meta-algorithm (`auto`) runs no schedule of its own: it picks another entry at run time.
    // Benchmarks compare it with the others; sweeps and tuning tables leave it out.
    bool meta = false;
    // A zero-size block is not sent and not received (as the vendors' alltoallv do): a receiver
    // that expects data where the sender has none waits for it, as it would in MPI_Alltoallv.
    // TUCOLL_CHECK=global catches that before any data moves. Algorithms without the flag post
    // every message of their schedule, so any disagreement of counts ends in an error instead.
    bool skips_empty_blocks = false;
    // Whether it reduces M, the largest block any rank sends, itself with these parameters at this
    // scope (TuNA's T, the hierarchical buffers). Under `auto` it takes auto's reduction instead,
    // so choosing it costs no reduction of its own; tuning tables charge the others.
    bool (*uses_max_block)(const Params &params, const Scope &scope) = nullptr;
};

// Common answers for flows_per_rank.
inline int64_t flows_unknown(const Params &, const Scope &) { return -1; }
inline int64_t flows_to_all_peers(const Params &, const Scope &scope) { return scope.nprocs - 1; }

// The most flows `alg` keeps in flight across the whole job (-1: unknown).
int64_t concurrent_flows(const AlgorithmInfo &alg, const Params &params, const Scope &scope);

// The canonical spec string of a resolved choice: "name" or "name:k=v,...", choices by name.
std::string spec_string(const AlgorithmInfo &alg, const Params &params);

// Checks `spec` against `alg` for `scope` and fills every parameter (defaults included).
// MPI_ERR_ARG with a message on an unknown key, or on an out-of-range value unless `clamped` is
// given: then the value is clamped into its range and *clamped says so ("" when nothing was).
int resolve_params(const AlgorithmInfo &alg, const Spec &spec, const Scope &scope, Params *out,
                   std::string *clamped = nullptr);

class RegistryBase {
  public:
    virtual ~RegistryBase() = default;
    virtual const char *collective() const = 0;
    virtual const char *env_var() const = 0;       // "TUCOLL_ALLTOALLV"
    virtual const char *default_spec() const = 0;  // used when neither call nor env chooses
    virtual size_t size() const = 0;
    virtual const AlgorithmInfo &info(size_t index) const = 0;
    static constexpr size_t npos = static_cast<size_t>(-1);
    size_t find_index(std::string_view name) const;  // npos when unknown
    const AlgorithmInfo *find_info(std::string_view name) const;
    std::string names() const;  // "a, b, c" for error messages
};

template <class Entry>
class Registry final : public RegistryBase {
  public:
    Registry(const char *collective, const char *env_var, const char *default_spec, std::vector<Entry> entries)
        : collective_(collective), env_var_(env_var), default_spec_(default_spec), entries_(std::move(entries)) {}
    const char *collective() const override { return collective_; }
    const char *env_var() const override { return env_var_; }
    const char *default_spec() const override { return default_spec_; }
    size_t size() const override { return entries_.size(); }
    const AlgorithmInfo &info(size_t index) const override { return entries_[index]; }
    const Entry &operator[](size_t index) const { return entries_[index]; }
    const Entry *find(std::string_view name) const {
        for (const Entry &e : entries_) {
            if (e.name == name) return &e;
        }
        return nullptr;
    }
    auto begin() const { return entries_.begin(); }
    auto end() const { return entries_.end(); }

  private:
    const char *collective_;
    const char *env_var_;
    const char *default_spec_;
    std::vector<Entry> entries_;
};

// The outcome of selection: which entry of a registry runs, with which parameters, and why.
struct Selection {
    size_t index = 0;
    Params params;
    std::string spec;          // canonical spec string
    const char *source = "";   // "call", the env var's name, or "default"
    std::string note;          // how a job-wide choice was adjusted to this scope ("" if it was not)
};

// Selection order: an explicit spec (non-empty) > `environment_spec`, what the registry's
// environment variable held when the communicator's context read it (nullptr or empty: unset) >
// the registry's default. Local and deterministic: ranks given the same inputs choose the same.
// An explicit spec is strict: a parameter out of range for this scope is an error. A spec from
// the environment or the default is set once for a whole job and must run on every communicator
// the program makes, so such a parameter is clamped into its range and `note` says so.
int select_algorithm(const RegistryBase &registry, const char *explicit_spec, const char *environment_spec,
                     const Scope &scope, Selection *out);

// Checks `text` against `registry` for `scope` (parse, known name, parameters in range).
int resolve_spec(const RegistryBase &registry, const char *text, const Scope &scope, Selection *out);

// Every registry of the library, for introspection (tucoll_registry_json, docs, bench).
const std::vector<const RegistryBase *> &all_registries();
const RegistryBase *registry_for(std::string_view collective);

}  // namespace tucoll
