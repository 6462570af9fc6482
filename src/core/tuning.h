// Tuning tables: what the `auto` algorithms read, and the one owner of their format, which the
// tools (tucoll table, tune, online tuning's TUCOLL_TUNING_SAVE) read, check, merge and write
// through (the C API's tucoll_tuning_table_*). A table maps the communicator's shape (P, ranks per
// node) and one or two block-size features, which every rank computes identically from one
// allreduce, to a spec string. The format is documented in docs/TUNING.md.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tucoll {

// The block-size features a table can be keyed by. All three come out of the single allreduce
// the `auto` algorithm makes (max, max, sum), which also gives TuNA its M.
enum class TuningFeature { kMaxBlock, kBusiestMeanBlock, kMeanBlock };

// Global block-size statistics of one call, in bytes, identical on every rank.
struct BlockSummary {
    double max_block = 0;      // largest block any rank sends (TuNA's M)
    double busiest_bytes = 0;  // bytes sent by the rank that sends most (its own block included)
    double total_bytes = 0;    // bytes sent by all ranks together
    double feature(TuningFeature f, int nprocs) const;
};

const char *feature_name(TuningFeature f);
// Whether ranks agree on the feature with MPI_MAX alone (max_block, busiest_mean_block), so that
// a built-in reduction gives it; mean_block needs the sum of every rank's bytes.
bool reduces_with_max(TuningFeature f);
bool parse_feature(const std::string &name, TuningFeature *out);

class TuningTable {
  public:
    // Rules split the range of one feature: the first rule whose `below` exceeds the feature's
    // value applies; it names a spec, or splits the next feature's range with rules of its own.
    struct Rule {
        double below;  // infinity for the last rule of a list
        std::string spec;  // empty when `rules` decides
        std::vector<Rule> rules;
    };
    struct Entry {
        int nprocs = 0;
        int ppn = 0;
        std::string source;  // where the numbers behind it were measured, for logs
        std::vector<Rule> rules;
        // Online tuning's record (size class k: largest blocks in [2^(k-1), 2^k) -> spec), from
        // which its max_block rules derive; empty for a swept entry.
        std::map<int, std::string> classes;
    };

    // Parses and validates `text` for `collective`; MPI_ERR_ARG (with a message) when it is not a
    // valid table. `origin` names it in messages.
    static int parse(const std::string &text, const std::string &origin, const std::string &collective,
                     std::shared_ptr<const TuningTable> *out);
    static int parse(const std::string &text, const std::string &origin, const std::string &collective,
                     std::shared_ptr<TuningTable> *out);
    // An online tuning table (keyed by max_block) without entries.
    static std::shared_ptr<TuningTable> online(const std::string &collective);

    // The table in the file format, entries in their order: parse() reads back the same table.
    std::string to_json() const;
    static std::string entry_json(const Entry &entry);
    // Whether every spec (leaves and fallback) is one the library runs at its entry's shape;
    // MPI_ERR_ARG naming the first that is not.
    int check_specs() const;
    // Adds `online`'s entries (an online table, keyed by max_block) for the shapes this table has
    // none for, nested under this table's other feature where it has two; a swept entry wins.
    // Entries end sorted by (Q, P). MPI_ERR_ARG when the features cannot join.
    int merge(const TuningTable &online, const std::string &origin, int *added);
    // Records online tuning's choice for size class `size_class` at (nprocs, ppn) and rederives
    // that entry's rules. MPI_ERR_ARG when this is not an online table or the shape has a swept entry.
    int record_choice(int nprocs, int ppn, int size_class, const std::string &spec);

    // The entry for a communicator of `nprocs` ranks with `ppn` per node: the exact one, else the
    // nearest by |log2(P/P')| + |log2(Q/Q')| (ties: the smaller P', then the smaller Q'); nullptr
    // when the table has no entries. Deterministic, so every rank picks the same.
    const Entry *entry_for(int nprocs, int ppn) const;
    // How far `entry`'s shape is from (nprocs, ppn) in that measure.
    static double distance(const Entry &entry, int nprocs, int ppn);
    // The spec for the feature values (in the order of features()) in `entry`.
    static const std::string &spec_for(const Entry &entry, const std::vector<double> &values);
    // The spec `entry` names whatever the feature values, or nullptr when its rules name several:
    // auto then decides without any communication.
    static const std::string *only_spec(const Entry &entry);

    const std::vector<TuningFeature> &features() const { return features_; }
    const std::string &fallback() const { return fallback_; }
    const std::string &origin() const { return origin_; }
    const std::vector<Entry> &entries() const { return entries_; }
    // A 52-bit fingerprint of the table's text (exact in a double): ranks compare it to be sure
    // they read the same table.
    double fingerprint() const { return fingerprint_; }

  private:
    static int parse_document(const std::string &text, const std::string &origin, const std::string &collective,
                              std::shared_ptr<TuningTable> *out);

    std::string origin_;
    std::string collective_;
    std::vector<TuningFeature> features_;
    std::string fallback_ = "vendor";
    std::string generated_by_ = "{}";  // provenance, JSON kept as written
    std::vector<Entry> entries_;
    double fingerprint_ = 0;
};

// The table the `auto` algorithm of `collective` uses: the file named by TUCOLL_TUNING_FILE when
// set, else the one installed with the library (share/tucoll/tuning/default.json next to the
// library, then the install prefix's). Loaded once per process and path. *table is nullptr when
// there is none; *problem then says why (a file that exists but cannot be used), or is empty.
void load_tuning_table(const std::string &collective, std::shared_ptr<const TuningTable> *table,
                       std::string *problem);

}  // namespace tucoll
