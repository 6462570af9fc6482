// Statistics of one collective call, kept on the communicator's context.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace tucoll {

struct CallStats {
    std::string collective;
    std::string algorithm;  // canonical spec string of what ran
    std::string path;       // "direct", "packed", or why a fallback was taken
    int64_t rounds = 0;
    int64_t messages = 0;
    int64_t bytes_sent = 0;
    int64_t temp_bytes = 0;
    int64_t scratch_bytes = 0;
    int64_t pack_bytes = 0;
    int64_t staging_bytes = 0;
    int64_t inter_region_messages = 0;  // messages to ranks on other nodes (sparse exchanges)

    // Keeps the strings' storage: a steady-state call allocates nothing here.
    void reset(const char *name) {
        collective = name;
        algorithm.clear();
        path.clear();
        rounds = messages = bytes_sent = temp_bytes = scratch_bytes = pack_bytes = staging_bytes = 0;
        inter_region_messages = 0;
    }

    // Appends one step of how the call ran to `path` ("direct; ipc host"), made of `parts`, into
    // the storage `path` keeps (a temporary string past 15 characters would allocate every call).
    void add_path(std::initializer_list<std::string_view> parts) {
        if (!path.empty()) path += "; ";
        for (std::string_view part : parts) path += part;
    }
    void add_path(std::string_view how) { add_path({how}); }

    // Book-keeping for one point-to-point data message of `bytes` bytes.
    void count_send(int64_t bytes) {
        ++messages;
        bytes_sent += bytes;
    }
};

}  // namespace tucoll
