#include "core/spec.h"

#include <mpi.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>

#include "core/errors.h"

namespace tucoll {
namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

bool valid_identifier(std::string_view s) {
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
    for (char c : s) {
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    }
    return true;
}

}  // namespace

bool parse_value(std::string_view text, long *out) {
    text = trim(text);
    if (text.empty()) return false;
    long multiplier = 1;
    switch (text.back()) {
        case 'k': case 'K': multiplier = 1L << 10; break;
        case 'm': case 'M': multiplier = 1L << 20; break;
        case 'g': case 'G': multiplier = 1L << 30; break;
        default: break;
    }
    if (multiplier != 1) text.remove_suffix(1);
    std::string digits(text);
    if (digits.empty()) return false;
    char *end = nullptr;
    errno = 0;
    long value = std::strtol(digits.c_str(), &end, 10);
    if (errno != 0 || end == digits.c_str() || *end != '\0') return false;
    if (value > LONG_MAX / multiplier || value < LONG_MIN / multiplier) return false;
    *out = value * multiplier;
    return true;
}

int parse_spec(std::string_view text, Spec *out) {
    Spec spec;
    std::string_view rest = trim(text);
    size_t colon = rest.find(':');
    spec.name = std::string(trim(rest.substr(0, colon)));
    if (!valid_identifier(spec.name)) {
        return failf(MPI_ERR_ARG, "spec \"%.*s\": algorithm name \"%s\" is not an identifier",
                     static_cast<int>(text.size()), text.data(), spec.name.c_str());
    }
    if (colon != std::string_view::npos) {
        std::string_view params = rest.substr(colon + 1);
        while (true) {
            size_t comma = params.find(',');
            std::string_view item = trim(params.substr(0, comma));
            size_t eq = item.find('=');
            std::string_view key = trim(item.substr(0, eq));
            long value = 0;
            if (eq == std::string_view::npos || !valid_identifier(key)) {
                return failf(MPI_ERR_ARG, "spec \"%.*s\": expected key=value, got \"%.*s\"",
                             static_cast<int>(text.size()), text.data(), static_cast<int>(item.size()),
                             item.data());
            }
            std::string_view raw = trim(item.substr(eq + 1));
            const bool is_word = !parse_value(raw, &value);
            if (is_word && !valid_identifier(raw)) {
                return failf(MPI_ERR_ARG, "spec \"%.*s\": value of %.*s is neither an integer nor a name: \"%.*s\"",
                             static_cast<int>(text.size()), text.data(), static_cast<int>(key.size()),
                             key.data(), static_cast<int>(raw.size()), raw.data());
            }
            const auto same_key = [&](const auto &kv) { return kv.first == key; };
            if (std::any_of(spec.values.begin(), spec.values.end(), same_key) ||
                std::any_of(spec.words.begin(), spec.words.end(), same_key)) {
                return failf(MPI_ERR_ARG, "spec \"%.*s\": parameter %.*s given twice",
                             static_cast<int>(text.size()), text.data(), static_cast<int>(key.size()), key.data());
            }
            if (is_word) {
                spec.words.emplace_back(std::string(key), std::string(raw));
            } else {
                spec.values.emplace_back(std::string(key), value);
            }
            if (comma == std::string_view::npos) break;
            params.remove_prefix(comma + 1);
        }
    }
    *out = std::move(spec);
    return MPI_SUCCESS;
}

}  // namespace tucoll
