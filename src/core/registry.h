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
};

// A bound of a parameter range: a constant or a property of the communicator.
class Bound {
  public:
    static Bound constant(long value) { return Bound(Kind::kConstant, value); }
    static Bound procs(long offset = 0) { return Bound(Kind::kProcs, offset); }        // P + offset
    static Bound local_procs(long offset = 0) { return Bound(Kind::kLocal, offset); }  // Q + offset
    static Bound unbounded() { return Bound(Kind::kUnbounded, 0); }

    long eval(const Scope &scope) const;
    std::string str() const;  // "2", "P", "P-1", "Q", "inf"
    bool is_unbounded() const { return kind_ == Kind::kUnbounded; }

  private:
    enum class Kind { kConstant, kProcs, kLocal, kUnbounded };
    Bound(Kind kind, long value) : kind_(kind), value_(value) {}
    Kind kind_;
    long value_;
};

struct ParamSpec {
    std::string name;
    Bound min;
    Bound max;
    long default_value;
    std::string doc;
};

// Parameter values of one resolved choice, in registry order, defaults filled in.
class Params {
  public:
    void set(const std::string &name, long value);
    long get(std::string_view name) const;  // registry guarantees presence
    const std::vector<std::pair<std::string, long>> &items() const { return items_; }
    std::string str() const;  // "radix=4,block_count=8" ("" without parameters)

  private:
    std::vector<std::pair<std::string, long>> items_;
};

// What every registry entry has, whatever the collective.
struct AlgorithmInfo {
    std::string name;
    std::string summary;      // one line for tables and --help
    std::vector<ParamSpec> params;
    std::string constraints;  // what it needs, and what happens when that does not hold
    // How many peers a rank talks to at once: "1" (round by round), "P-1" (all at once),
    // "param:NAME" (NAME per batch, 0 = all P-1), "param:NAME<=B" (the same, never more than B:
    // "N-1" other nodes, "P-Q" ranks on other nodes), "unknown" (vendor). Simulation tools use it
    // to refuse runs whose concurrent flows would take hours to simulate.
    std::string at_once = "1";
    // A meta-algorithm (`auto`) runs no schedule of its own: it picks another entry at run time.
    // Benchmarks compare it with the others; sweeps and tuning tables leave it out.
    bool meta = false;
    // A zero-size block is not sent and not received (as the vendors' alltoallv do): a receiver
    // that expects data where the sender has none waits for it, as it would in MPI_Alltoallv.
    // TUCOLL_CHECK=global catches that before any data moves. Algorithms without the flag post
    // every message of their schedule, so any disagreement of counts ends in an error instead.
    bool skips_empty_blocks = false;
    // It reduces the largest block itself (TuNA's M). Under `auto` it takes the result of auto's
    // own allreduce instead, so choosing it adds no reduction; tuning tables charge the others.
    bool reduces_max_block = false;
};

// The canonical spec string of a resolved choice: "name" or "name:k=v,...".
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

// Selection order: an explicit spec (non-empty) > the registry's environment variable > the
// registry's default. Local and deterministic: ranks given the same inputs choose the same.
// An explicit spec is strict: a parameter out of range for this scope is an error. A spec from
// the environment or the default is set once for a whole job and must run on every communicator
// the program makes, so such a parameter is clamped into its range and `note` says so.
int select_algorithm(const RegistryBase &registry, const char *explicit_spec, const Scope &scope,
                     Selection *out);

// Checks `text` against `registry` for `scope` (parse, known name, parameters in range).
int resolve_spec(const RegistryBase &registry, const char *text, const Scope &scope, Selection *out);

// Every registry of the library, for introspection (tucoll_registry_json, docs, bench).
const std::vector<const RegistryBase *> &all_registries();
const RegistryBase *registry_for(std::string_view collective);

}  // namespace tucoll
