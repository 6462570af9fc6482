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

#include "core/errors.h"

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

// Parses a rule list splitting feature `depth` (of `features` in all); "" or what is wrong.
std::string parse_rules(const nlohmann::json &rules, size_t depth, size_t features,
                        std::vector<TuningTable::Rule> *out) {
    if (!rules.is_array() || rules.empty()) return "needs a non-empty \"rules\" array";
    double previous = -std::numeric_limits<double>::infinity();
    for (const nlohmann::json &r : rules) {
        if (!r.is_object()) return "every rule must be an object";
        TuningTable::Rule rule{std::numeric_limits<double>::infinity(), "", {}};
        const nlohmann::json below = r.value("below", nlohmann::json());
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
                       std::shared_ptr<const TuningTable> *out) {
    // nlohmann::json throws on a field of the wrong type ("format": 1); no exception may leave
    // the library through its C interface.
    try {
        return parse_document(text, origin, collective, out);
    } catch (const nlohmann::json::exception &e) {
        return fail(MPI_ERR_ARG, "tuning table " + origin + ": " + e.what());
    }
}

int TuningTable::parse_document(const std::string &text, const std::string &origin, const std::string &collective,
                                std::shared_ptr<const TuningTable> *out) {
    auto bad = [&](const std::string &why) { return fail(MPI_ERR_ARG, "tuning table " + origin + ": " + why); };
    nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded() || !doc.is_object()) return bad("not a JSON object");
    if (doc.value("format", "") != kFormat) return bad(std::string("\"format\" is not \"") + kFormat + "\"");
    if (!doc.contains("version") || !doc["version"].is_number_integer() || doc["version"].get<int>() != kVersion) {
        return bad("unsupported \"version\" (this library reads version " + std::to_string(kVersion) + ")");
    }
    if (doc.value("collective", "") != collective) return bad("is not a table for " + collective);

    auto table = std::make_shared<TuningTable>();
    table->origin_ = origin;
    table->fingerprint_ = fingerprint_of(text);
    const nlohmann::json features = doc.value("features", nlohmann::json());
    if (!features.is_array() || features.empty() || features.size() > kMaxFeatures) {
        return bad("\"features\" must list one or two of max_block, busiest_mean_block, mean_block");
    }
    for (const nlohmann::json &f : features) {
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
    const nlohmann::json entries = doc.value("entries", nlohmann::json());
    if (!entries.is_array()) return bad("\"entries\" must be an array");
    for (const nlohmann::json &e : entries) {
        Entry entry;
        const std::string where = "entry " + std::to_string(table->entries_.size());
        if (!e.is_object() || !e.contains("nprocs") || !e["nprocs"].is_number_integer() || !e.contains("ppn") ||
            !e["ppn"].is_number_integer()) {
            return bad(where + " needs integer \"nprocs\" and \"ppn\"");
        }
        entry.nprocs = e["nprocs"].get<int>();
        entry.ppn = e["ppn"].get<int>();
        if (entry.nprocs < 1 || entry.ppn < 1) return bad(where + ": nprocs and ppn must be positive");
        entry.source = e.value("source", "");
        const std::string why = parse_rules(e.value("rules", nlohmann::json()), 0, table->features_.size(), &entry.rules);
        if (!why.empty()) return bad(where + ": " + why);
        table->entries_.push_back(std::move(entry));
    }
    *out = std::move(table);
    return MPI_SUCCESS;
}

namespace {

// Whether every leaf of `rules` names *spec (set to the first leaf met when null).
bool all_leaves_name(const std::vector<TuningTable::Rule> &rules, const std::string *&spec) {
    for (const TuningTable::Rule &r : rules) {
        if (!r.rules.empty()) {
            if (!all_leaves_name(r.rules, spec)) return false;
        } else if (spec == nullptr) {
            spec = &r.spec;
        } else if (*spec != r.spec) {
            return false;
        }
    }
    return true;
}

}  // namespace

const std::string *TuningTable::only_spec(const Entry &entry) {
    const std::string *spec = nullptr;
    return all_leaves_name(entry.rules, spec) ? spec : nullptr;
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
