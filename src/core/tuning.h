// Tuning tables: what `tucoll table` writes and the `auto` algorithms read. A table maps the
// communicator's shape (P, ranks per node) and one or two block-size features, which every rank
// computes identically from one allreduce, to a spec string. The format is documented in
// docs/TUNING.md.
#pragma once

#include <cstdint>
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
    };

    // Parses and validates `text` for `collective`; MPI_ERR_ARG (with a message) when it is not a
    // valid table. `origin` names it in messages.
    static int parse(const std::string &text, const std::string &origin, const std::string &collective,
                     std::shared_ptr<const TuningTable> *out);

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
    // A 52-bit fingerprint of the table's text (exact in a double): ranks compare it to be sure
    // they read the same table.
    double fingerprint() const { return fingerprint_; }

  private:
    static int parse_document(const std::string &text, const std::string &origin, const std::string &collective,
                              std::shared_ptr<const TuningTable> *out);

    std::string origin_;
    std::vector<TuningFeature> features_;
    std::string fallback_ = "vendor";
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
