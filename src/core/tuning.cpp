#include "core/tuning.h"

#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "core/errors.h"
#include "core/registry.h"

namespace tucoll {

namespace {

constexpr const char *kFormat = "tucoll-tuning-table";
constexpr int kVersion = 1;

struct FeatureName {
    TuningFeature feature;
    const char *name;
};
constexpr FeatureName kFeatures[] = {
    {TuningFeature::kMaxBlock, "max_block"},
    {TuningFeature::kBusiestMeanBlock, "busiest_mean_block"},
    {TuningFeature::kMeanBlock, "mean_block"},
};

// FNV-1a, folded to 52 bits so that the value is exact as a double.
double fingerprint_of(const std::string &text) {
    uint64_t h = 1469598103934665603ULL;
    for (unsigned char c : text) {
        h ^= c;
        h *= 1099511628211ULL;
    }
    return static_cast<double>((h ^ (h >> 52)) & ((uint64_t{1} << 52) - 1)) + 1.0;
}

double log2_distance(int a, int b) { return std::fabs(std::log2(static_cast<double>(a) / static_cast<double>(b))); }

}  // namespace

double BlockSummary::feature(TuningFeature f, int nprocs) const {
    const double p = std::max(1, nprocs);
    switch (f) {
        case TuningFeature::kMaxBlock: return max_block;
        case TuningFeature::kBusiestMeanBlock: return busiest_bytes / p;
        case TuningFeature::kMeanBlock: return total_bytes / (p * p);
    }
    return 0;
}

const char *feature_name(TuningFeature f) {
    for (const FeatureName &n : kFeatures) {
        if (n.feature == f) return n.name;
    }
    return "?";
}

bool reduces_with_max(TuningFeature f) { return f != TuningFeature::kMeanBlock; }

bool parse_feature(const std::string &name, TuningFeature *out) {
    for (const FeatureName &n : kFeatures) {
        if (name == n.name) {
            *out = n.feature;
            return true;
        }
    }
    return false;
}

namespace {

constexpr size_t kMaxFeatures = 2;

// Whether an entry is for exactly this shape (a table holds at most one).
auto shape_is(int nprocs, int ppn) {
    return [=](const TuningTable::Entry &e) { return e.nprocs == nprocs && e.ppn == ppn; };
}

using Json = nlohmann::ordered_json;  // keeps the order a table was written in

// Parses a rule list splitting feature `depth` (of `features` in all); "" or what is wrong.
std::string parse_rules(const Json &rules, size_t depth, size_t features, std::vector<TuningTable::Rule> *out) {
    if (!rules.is_array() || rules.empty()) return "needs a non-empty \"rules\" array";
    double previous = -std::numeric_limits<double>::infinity();
    for (const Json &r : rules) {
        if (!r.is_object()) return "every rule must be an object";
        TuningTable::Rule rule{std::numeric_limits<double>::infinity(), "", {}};
        const Json below = r.value("below", Json());
        if (below.is_number()) {
            rule.below = below.get<double>();
        } else if (!below.is_null()) {
            return "\"below\" must be a number or null";
        }
        if (!(rule.below > previous)) return "\"below\" values must increase";
        previous = rule.below;
        const bool has_spec = r.contains("spec"), has_rules = r.contains("rules");
        if (has_spec == has_rules) return "every rule needs either a \"spec\" string or nested \"rules\"";
        if (has_spec) {
            if (!r["spec"].is_string()) return "\"spec\" must be a string";
            rule.spec = r["spec"].get<std::string>();
        } else {
            if (depth + 1 >= features) return "nested \"rules\" need one more feature than the table has";
            std::string why = parse_rules(r["rules"], depth + 1, features, &rule.rules);
            if (!why.empty()) return why;
        }
        out->push_back(std::move(rule));
    }
    if (!std::isinf(out->back().below)) return "the last rule must have \"below\": null";
    return "";
}

}  // namespace

int TuningTable::parse(const std::string &text, const std::string &origin, const std::string &collective,
                       std::shared_ptr<TuningTable> *out) {
    // nlohmann::json throws on a field of the wrong type ("format": 1); no exception may leave
    // the library through its C interface.
    try {
        return parse_document(text, origin, collective, out);
    } catch (const nlohmann::json::exception &e) {
        return fail(MPI_ERR_ARG, "tuning table " + origin + ": " + e.what());
    }
}

int TuningTable::parse(const std::string &text, const std::string &origin, const std::string &collective,
                       std::shared_ptr<const TuningTable> *out) {
    std::shared_ptr<TuningTable> table;
    TUCOLL_TRY(parse(text, origin, collective, &table));
    *out = std::move(table);
    return MPI_SUCCESS;
}

int TuningTable::parse_document(const std::string &text, const std::string &origin, const std::string &collective,
                                std::shared_ptr<TuningTable> *out) {
    auto bad = [&](const std::string &why) { return fail(MPI_ERR_ARG, "tuning table " + origin + ": " + why); };
    Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded() || !doc.is_object()) return bad("not a JSON object");
    if (doc.value("format", "") != kFormat) return bad(std::string("\"format\" is not \"") + kFormat + "\"");
    if (!doc.contains("version") || !doc["version"].is_number_integer() || doc["version"].get<int>() != kVersion) {
        return bad("unsupported \"version\" (this library reads version " + std::to_string(kVersion) + ")");
    }
    if (doc.value("collective", "") != collective) return bad("is not a table for " + collective);

    auto table = std::make_shared<TuningTable>();
    table->origin_ = origin;
    table->collective_ = collective;
    table->fingerprint_ = fingerprint_of(text);
    const Json features = doc.value("features", Json());
    if (!features.is_array() || features.empty() || features.size() > kMaxFeatures) {
        return bad("\"features\" must list one or two of max_block, busiest_mean_block, mean_block");
    }
    for (const Json &f : features) {
        TuningFeature feature;
        if (!f.is_string() || !parse_feature(f.get<std::string>(), &feature)) {
            return bad("unknown feature " + f.dump() + " (known: max_block, busiest_mean_block, mean_block)");
        }
        table->features_.push_back(feature);
    }
    if (doc.contains("fallback")) {
        if (!doc["fallback"].is_string()) return bad("\"fallback\" must be a spec string");
        table->fallback_ = doc["fallback"].get<std::string>();
    }
    if (doc.contains("generated_by")) table->generated_by_ = doc["generated_by"].dump();
    const Json entries = doc.value("entries", Json());
    if (!entries.is_array()) return bad("\"entries\" must be an array");
    for (const Json &e : entries) {
        Entry entry;
        const std::string where = "entry " + std::to_string(table->entries_.size());
        if (!e.is_object() || !e.contains("nprocs") || !e["nprocs"].is_number_integer() || !e.contains("ppn") ||
            !e["ppn"].is_number_integer()) {
            return bad(where + " needs integer \"nprocs\" and \"ppn\"");
        }
        entry.nprocs = e["nprocs"].get<int>();
        entry.ppn = e["ppn"].get<int>();
        if (entry.nprocs < 1 || entry.ppn < 1) return bad(where + ": nprocs and ppn must be positive");
        if (std::any_of(table->entries_.begin(), table->entries_.end(), shape_is(entry.nprocs, entry.ppn))) {
            return bad(where + " repeats a shape");
        }
        entry.source = e.value("source", "");
        if (e.contains("classes")) {
            if (!e["classes"].is_object()) return bad(where + ": \"classes\" must map size classes to specs");
            for (const auto &[k, spec] : e["classes"].items()) {
                char *end = nullptr;
                const long size_class = std::strtol(k.c_str(), &end, 10);
                if (k.empty() || *end != '\0' || size_class < 0 || size_class > 64 || !spec.is_string()) {
                    return bad(where + ": \"classes\" must map size classes 0..64 to specs");
                }
                entry.classes[static_cast<int>(size_class)] = spec.get<std::string>();
            }
        }
        const std::string why = parse_rules(e.value("rules", Json()), 0, table->features_.size(), &entry.rules);
        if (!why.empty()) return bad(where + ": " + why);
        table->entries_.push_back(std::move(entry));
    }
    *out = std::move(table);
    return MPI_SUCCESS;
}

std::shared_ptr<TuningTable> TuningTable::online(const std::string &collective) {
    auto table = std::make_shared<TuningTable>();
    table->origin_ = "online tuning";
    table->collective_ = collective;
    table->features_ = {TuningFeature::kMaxBlock};
    table->generated_by_ = R"json({"by": "tucoll online tuning (TUCOLL_TUNING_SAVE)"})json";
    return table;
}

namespace {

Json rules_json(const std::vector<TuningTable::Rule> &rules) {
    Json out = Json::array();
    for (const TuningTable::Rule &r : rules) {
        Json rule = {{"below", std::isinf(r.below) ? Json() : Json(r.below)}};
        if (r.rules.empty()) {
            rule["spec"] = r.spec;
        } else {
            rule["rules"] = rules_json(r.rules);
        }
        out.push_back(std::move(rule));
    }
    return out;
}

Json entry_doc(const TuningTable::Entry &e) {
    Json entry = {{"nprocs", e.nprocs}, {"ppn", e.ppn}, {"source", e.source}};
    if (!e.classes.empty()) {
        Json classes = Json::object();
        for (const auto &[k, spec] : e.classes) classes[std::to_string(k)] = spec;
        entry["classes"] = std::move(classes);
    }
    entry["rules"] = rules_json(e.rules);
    return entry;
}

// Calls fn(spec) on every leaf of `rules` until it returns non-zero; that value, else 0.
template <typename Fn>
int each_leaf(const std::vector<TuningTable::Rule> &rules, Fn &&fn) {
    for (const TuningTable::Rule &r : rules) {
        const int rc = r.rules.empty() ? fn(r.spec) : each_leaf(r.rules, fn);
        if (rc != 0) return rc;
    }
    return 0;
}

// Online tuning's rules from its record: class k covers largest blocks in [2^(k-1), 2^k), so its
// rule ends below 2^k, and the last one is open.
std::vector<TuningTable::Rule> class_rules(const std::map<int, std::string> &classes) {
    std::vector<TuningTable::Rule> rules;
    for (auto it = classes.begin(); it != classes.end(); ++it) {
        const bool last = std::next(it) == classes.end();
        rules.push_back({last ? std::numeric_limits<double>::infinity() : std::ldexp(1.0, it->first), it->second, {}});
    }
    return rules;
}

}  // namespace

std::string TuningTable::entry_json(const Entry &e) { return entry_doc(e).dump(); }

std::string TuningTable::to_json() const {
    Json features = Json::array();
    for (TuningFeature f : features_) features.push_back(feature_name(f));
    Json entries = Json::array();
    for (const Entry &e : entries_) entries.push_back(entry_doc(e));
    const Json doc = {{"format", kFormat},         {"version", kVersion},
                      {"collective", collective_}, {"features", std::move(features)},
                      {"fallback", fallback_},     {"generated_by", Json::parse(generated_by_)},
                      {"entries", std::move(entries)}};
    return doc.dump(1) + "\n";
}

int TuningTable::check_specs() const {
    const RegistryBase *registry = registry_for(collective_);
    if (registry == nullptr) return fail(MPI_ERR_ARG, "tuning table " + origin_ + ": no registry for " + collective_);
    for (const Entry &e : entries_) {
        const Scope scope{e.nprocs, std::min(e.ppn, e.nprocs)};
        auto check = [&](const std::string &spec) {
            Selection selection;
            if (resolve_spec(*registry, spec.c_str(), scope, &selection) == MPI_SUCCESS) return 0;
            return fail(MPI_ERR_ARG, "tuning table " + origin_ + ", entry P=" + std::to_string(e.nprocs) + " Q=" +
                                         std::to_string(e.ppn) + ": " + last_message(MPI_ERR_ARG));
        };
        TUCOLL_TRY(each_leaf(e.rules, check));
        TUCOLL_TRY(check(fallback_));
    }
    return MPI_SUCCESS;
}

int TuningTable::merge(const TuningTable &online, const std::string &origin, int *added) {
    *added = 0;
    if (online.features_ != std::vector<TuningFeature>{TuningFeature::kMaxBlock}) {
        return fail(MPI_ERR_ARG, origin + ": an online tuning table is keyed by max_block alone");
    }
    const auto max_at = std::find(features_.begin(), features_.end(), TuningFeature::kMaxBlock);
    if (max_at == features_.end()) {
        return fail(MPI_ERR_ARG, origin + ": the table is not keyed by max_block; online choices cannot join it");
    }
    for (const Entry &e : online.entries_) {
        if (std::any_of(entries_.begin(), entries_.end(), shape_is(e.nprocs, e.ppn))) continue;  // swept: it wins
        Entry entry{e.nprocs, e.ppn, "online (" + origin + ")", e.rules, {}};
        if (features_.size() == 2 && max_at == features_.begin()) {  // max_block, then another: any value of it
            for (Rule &r : entry.rules) r = Rule{r.below, "", {Rule{std::numeric_limits<double>::infinity(), r.spec, {}}}};
        } else if (features_.size() == 2) {  // another, then max_block: every value of the first
            entry.rules = {Rule{std::numeric_limits<double>::infinity(), "", std::move(entry.rules)}};
        }
        entries_.push_back(std::move(entry));
        ++*added;
    }
    std::stable_sort(entries_.begin(), entries_.end(),
                     [](const Entry &a, const Entry &b) { return std::tie(a.ppn, a.nprocs) < std::tie(b.ppn, b.nprocs); });
    return MPI_SUCCESS;
}

int TuningTable::record_choice(int nprocs, int ppn, int size_class, const std::string &spec) {
    if (features_ != std::vector<TuningFeature>{TuningFeature::kMaxBlock}) {
        return fail(MPI_ERR_ARG, "is not an online tuning table (features [\"max_block\"])");
    }
    auto it = std::find_if(entries_.begin(), entries_.end(), shape_is(nprocs, ppn));
    if (it == entries_.end()) {
        entries_.push_back(Entry{nprocs, ppn, "online", {}, {}});
        it = std::prev(entries_.end());
    } else if (it->classes.empty()) {
        return failf(MPI_ERR_ARG, "has a swept entry for P=%d, Q=%d, which online tuning does not overwrite", nprocs, ppn);
    }
    it->classes[size_class] = spec;
    it->rules = class_rules(it->classes);
    return MPI_SUCCESS;
}

const std::string *TuningTable::only_spec(const Entry &entry) {
    const std::string *spec = nullptr;
    const int several = each_leaf(entry.rules, [&](const std::string &leaf) {
        if (spec == nullptr) spec = &leaf;
        return *spec == leaf ? 0 : 1;
    });
    return several ? nullptr : spec;
}

double TuningTable::distance(const Entry &entry, int nprocs, int ppn) {
    return log2_distance(nprocs, entry.nprocs) + log2_distance(std::max(1, ppn), entry.ppn);
}

const TuningTable::Entry *TuningTable::entry_for(int nprocs, int ppn) const {
    const Entry *best = nullptr;
    double best_distance = std::numeric_limits<double>::infinity();
    for (const Entry &e : entries_) {
        const double d = distance(e, nprocs, ppn);
        const bool better = best == nullptr || d < best_distance - 1e-12 ||
                            (std::fabs(d - best_distance) <= 1e-12 &&
                             (e.nprocs < best->nprocs || (e.nprocs == best->nprocs && e.ppn < best->ppn)));
        if (better) {
            best = &e;
            best_distance = d;
        }
    }
    return best;
}

const std::string &TuningTable::spec_for(const Entry &entry, const std::vector<double> &values) {
    const std::vector<Rule> *rules = &entry.rules;
    for (size_t depth = 0;; ++depth) {
        const double value = depth < values.size() ? values[depth] : 0.0;
        const Rule *chosen = &rules->back();
        for (const Rule &r : *rules) {
            if (value < r.below) {
                chosen = &r;
                break;
            }
        }
        if (chosen->rules.empty()) return chosen->spec;
        rules = &chosen->rules;
    }
}

namespace {

// share/tucoll/tuning/default.json beside the directory holding this library (lib/ or bin/ of
// a build tree or an installation), then the configured install location.
std::vector<std::string> default_table_paths() {
    std::vector<std::string> paths;
    Dl_info info;
    if (dladdr(reinterpret_cast<void *>(&default_table_paths), &info) != 0 && info.dli_fname != nullptr) {
        std::string self = info.dli_fname;
        const size_t slash = self.rfind('/');
        if (slash != std::string::npos) paths.push_back(self.substr(0, slash) + "/../share/tucoll/tuning/default.json");
    }
#ifdef TUCOLL_TUNING_INSTALL_FILE
    paths.emplace_back(TUCOLL_TUNING_INSTALL_FILE);
#endif
    return paths;
}

struct Loaded {
    std::shared_ptr<const TuningTable> table;
    std::string problem;
};

Loaded load_file(const std::string &path, const std::string &collective) {
    Loaded loaded;
    std::ifstream in(path);
    if (!in) {
        loaded.problem = "cannot read tuning table " + path;
        return loaded;
    }
    std::stringstream text;
    text << in.rdbuf();
    if (TuningTable::parse(text.str(), path, collective, &loaded.table) != MPI_SUCCESS) {
        loaded.problem = last_message(MPI_ERR_ARG);
        loaded.table.reset();
    }
    return loaded;
}

}  // namespace

void load_tuning_table(const std::string &collective, std::shared_ptr<const TuningTable> *table,
                       std::string *problem) {
    static std::mutex mutex;
    static std::map<std::string, Loaded> cache;  // by collective + path
    std::string path;
    const char *env = std::getenv("TUCOLL_TUNING_FILE");
    if (env != nullptr && *env != '\0') {
        path = env;
    } else {
        // Searched once per process: a metadata lookup per call and rank would be slow on a
        // shared file system, and one rank's transient failure would look like a different table.
        static const std::string found = [] {
            for (const std::string &candidate : default_table_paths()) {
                if (std::ifstream(candidate).good()) return candidate;
            }
            return std::string();
        }();
        path = found;
    }
    if (path.empty()) {
        table->reset();
        problem->clear();
        return;
    }
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(collective + '\n' + path);
    if (it == cache.end()) it = cache.emplace(collective + '\n' + path, load_file(path, collective)).first;
    *table = it->second.table;
    *problem = it->second.problem;
}

}  // namespace tucoll
