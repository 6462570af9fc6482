// Spec strings — the one spelling of an algorithm choice: "name" or "name:key=value,key=value".
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tucoll {

// An algorithm choice as written by a user, before it is checked against a registry.
struct Spec {
    std::string name;
    std::vector<std::pair<std::string, long>> values;  // in the order written
    // Values written as names (copy=hybrid): resolved against the parameter's choices.
    std::vector<std::pair<std::string, std::string>> words;
};

// Parses `text`. Values are integers with an optional binary suffix (K, M, G: 4K = 4096), or
// identifiers naming one of a parameter's choices.
// Returns MPI_SUCCESS or MPI_ERR_ARG with a message.
int parse_spec(std::string_view text, Spec *out);

// Parses one integer value with optional K/M/G suffix; false when malformed or out of range.
bool parse_value(std::string_view text, long *out);

}  // namespace tucoll
