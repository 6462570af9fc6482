#include "report.h"

#include <map>

namespace tucoll::bench {

const char *const kCsvHeader =
    "collective,algorithm,params,nprocs,ppn,dist,size,type,iters,median_us,min_us,max_us,rounds,messages,"
    "scratch_bytes,ok,mean_us,bytes_sent,temp_bytes,staging_bytes,mapping,path";

namespace {

std::string csv_field(const std::string &s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

std::string ok_text(int ok) { return ok < 0 ? "-" : std::to_string(ok); }

std::string spec_of(const Row &r) { return r.params.empty() ? r.algorithm : r.algorithm + ":" + r.params; }

// The spec, followed by what it chose when it is a meta-algorithm ("auto -> tuna:radix=2").
std::string label_of(const Row &r) {
    const std::string spec = spec_of(r);
    return r.chosen.empty() || r.chosen == spec ? spec : spec + " -> " + r.chosen;
}

std::string human_bytes(int64_t b) {
    char buf[32];
    if (b >= (1 << 20) && b % (1 << 20) == 0) std::snprintf(buf, sizeof buf, "%lldM", static_cast<long long>(b >> 20));
    else if (b >= 1024 && b % 1024 == 0) std::snprintf(buf, sizeof buf, "%lldK", static_cast<long long>(b >> 10));
    else std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(b));
    return buf;
}

bool sparse(const Row &r) { return r.collective.size() > 4 && r.collective.compare(r.collective.size() - 4, 4, "_crs") == 0; }

void print_csv(const std::vector<Row> &rows, std::FILE *out) {
    const bool with_regions = !rows.empty() && sparse(rows.front());
    std::string extra_names;
    if (!rows.empty()) {
        for (const auto &column : rows.front().extra) extra_names += "," + column.first;
    }
    // The sparse exchanges' inter_region_msgs stays last, after the collective's own columns.
    std::fprintf(out, "%s%s%s\n", kCsvHeader, extra_names.c_str(), with_regions ? ",inter_region_msgs" : "");
    for (const Row &r : rows) {
        std::fprintf(out, "%s,%s,%s,%d,%d,%s,%lld,%s,%d,%.3f,%.3f,%.3f,%lld,%lld,%lld,%s,%.3f,%lld,%lld,%lld,%s,%s",
                     r.collective.c_str(), r.algorithm.c_str(), csv_field(r.params).c_str(), r.nprocs, r.ppn,
                     csv_field(r.dist).c_str(), static_cast<long long>(r.size), r.type.c_str(), r.iters, r.median_us,
                     r.min_us, r.max_us, static_cast<long long>(r.rounds), static_cast<long long>(r.messages),
                     static_cast<long long>(r.scratch_bytes), ok_text(r.ok).c_str(), r.mean_us,
                     static_cast<long long>(r.bytes_sent), static_cast<long long>(r.temp_bytes),
                     static_cast<long long>(r.staging_bytes), r.mapping.c_str(), csv_field(r.path).c_str());
        for (const auto &column : r.extra) std::fprintf(out, ",%s", csv_field(column.second).c_str());
        if (with_regions) std::fprintf(out, ",%lld", static_cast<long long>(r.inter_region_msgs));
        std::fprintf(out, "\n");
    }
}

// One block per algorithm, as the OSU micro-benchmarks print them.
void print_osu(const std::vector<Row> &rows, std::FILE *out) {
    std::vector<std::string> order;
    std::map<std::string, std::vector<const Row *>> by_alg;
    for (const Row &r : rows) {
        std::string spec = spec_of(r);
        if (!by_alg.count(spec)) order.push_back(spec);
        by_alg[spec].push_back(&r);
    }
    bool first = true;
    for (const std::string &spec : order) {
        const Row &head = *by_alg[spec].front();
        std::fprintf(out, "%s# tucoll-bench %s: %s (P=%d, ppn=%d, dist=%s, type=%s)\n", first ? "" : "\n",
                     head.collective.c_str(), spec.c_str(), head.nprocs, head.ppn, head.dist.c_str(), head.type.c_str());
        std::fprintf(out, "# Latency of the slowest rank per iteration; Avg is its mean, Median its median.\n");
        std::fprintf(out, "%-10s %18s %18s %18s %18s %10s %4s\n", "# Size", "Avg Latency(us)", "Median Latency(us)",
                     "Min Latency(us)", "Max Latency(us)", "Iterations", "OK");
        for (const Row *r : by_alg[spec]) {
            std::fprintf(out, "%-10lld %18.2f %18.2f %18.2f %18.2f %10d %4s\n", static_cast<long long>(r->size),
                         r->mean_us, r->median_us, r->min_us, r->max_us, r->iters, ok_text(r->ok).c_str());
        }
        first = false;
    }
}

// A side-by-side comparison, with each algorithm's speed relative to the vendor MPI.
void print_table(const std::vector<Row> &rows, std::FILE *out) {
    if (rows.empty()) return;
    const Row &head = rows.front();
    std::fprintf(out, "tucoll-bench %s  P=%d ppn=%d mapping=%s dist=%s type=%s iters=%d\n", head.collective.c_str(),
                 head.nprocs, head.ppn, head.mapping.c_str(), head.dist.c_str(), head.type.c_str(), head.iters);
    std::fprintf(out, "time = slowest rank per iteration, median over iterations (interleaved); "
                      "speedup = vendor median / median\n");
    std::fprintf(out, "%-8s %-36s %11s %11s %11s %8s %7s %8s %9s %3s\n", "size", "algorithm", "median_us", "min_us",
                 "max_us", "speedup", "rounds", "messages", "scratch", "ok");
    std::map<int64_t, double> vendor;
    for (const Row &r : rows) {
        if (r.algorithm == "vendor") vendor[r.size] = r.median_us;
    }
    int64_t last_size = -1;
    for (const Row &r : rows) {
        if (last_size >= 0 && r.size != last_size) std::fprintf(out, "\n");
        last_size = r.size;
        std::string speedup = "-";
        if (vendor.count(r.size) && r.median_us > 0) {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.2fx", vendor[r.size] / r.median_us);
            speedup = buf;
        }
        std::fprintf(out, "%-8s %-36s %11.2f %11.2f %11.2f %8s %7lld %8lld %9s %3s\n", human_bytes(r.size).c_str(),
                     label_of(r).c_str(), r.median_us, r.min_us, r.max_us, speedup.c_str(),
                     static_cast<long long>(r.rounds), static_cast<long long>(r.messages),
                     human_bytes(r.scratch_bytes).c_str(), ok_text(r.ok).c_str());
    }
}

// One row per timed iteration and algorithm: how a time evolves over the calls (auto's online
// tuning explores, then settles).
void print_calls(const std::vector<Row> &rows, std::FILE *out) {
    std::fprintf(out, "collective,algorithm,params,nprocs,ppn,dist,size,call,us\n");
    for (const Row &r : rows) {
        for (size_t i = 0; i < r.calls_us.size(); ++i) {
            std::fprintf(out, "%s,%s,%s,%d,%d,%s,%lld,%zu,%.3f\n", r.collective.c_str(), r.algorithm.c_str(),
                         csv_field(r.params).c_str(), r.nprocs, r.ppn, csv_field(r.dist).c_str(),
                         static_cast<long long>(r.size), i + 1, r.calls_us[i]);
        }
    }
}

}  // namespace

void print_rows(const std::vector<Row> &rows, const std::string &format, std::FILE *out) {
    if (format == "csv") print_csv(rows, out);
    else if (format == "osu") print_osu(rows, out);
    else if (format == "calls") print_calls(rows, out);
    else print_table(rows, out);
    std::fflush(out);
}

}  // namespace tucoll::bench
