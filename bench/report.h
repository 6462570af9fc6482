// Output formats of tucoll-bench: a comparison table, CSV, and OSU-style latency blocks.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "runner.h"

namespace tucoll::bench {

// The CSV header every collective's rows start with; collectives may append columns after it.
extern const char *const kCsvHeader;

void print_rows(const std::vector<Row> &rows, const std::string &format, std::FILE *out);

}  // namespace tucoll::bench
