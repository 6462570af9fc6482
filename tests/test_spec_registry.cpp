// Spec strings, parameter resolution, selection order and registry introspection.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "alltoallv/alltoallv.h"
#include "core/registry.h"
#include "core/spec.h"
#include "test_util.h"
#include "tucoll.h"

namespace tucoll::test {
namespace {

TEST(Spec, ParsesNameAndValues) {
    Spec s;
    ASSERT_EQ(parse_spec(" tuna_coalesced : radix = 4 , block_count=8 ", &s), MPI_SUCCESS);
    EXPECT_EQ(s.name, "tuna_coalesced");
    ASSERT_EQ(s.values.size(), 2u);
    EXPECT_EQ(s.values[0], (std::pair<std::string, long>{"radix", 4}));
    EXPECT_EQ(s.values[1], (std::pair<std::string, long>{"block_count", 8}));
}

TEST(Spec, ParsesBareNameAndSuffixes) {
    Spec s;
    ASSERT_EQ(parse_spec("vendor", &s), MPI_SUCCESS);
    EXPECT_EQ(s.name, "vendor");
    EXPECT_TRUE(s.values.empty());
    long v = 0;
    EXPECT_TRUE(parse_value("4K", &v));
    EXPECT_EQ(v, 4096);
    EXPECT_TRUE(parse_value("2m", &v));
    EXPECT_EQ(v, 2L << 20);
    EXPECT_TRUE(parse_value("-3", &v));
    EXPECT_EQ(v, -3);
}

// Named values are kept as words; the registry resolves them against the parameter's choices
// (test_ipc: copy=kernel|memcpy|hybrid), and a parameter without choices rejects them.
TEST(Spec, ParsesNamedValues) {
    Spec s;
    ASSERT_EQ(parse_spec("ipc:copy=hybrid,ipc_threshold=4K", &s), MPI_SUCCESS);
    ASSERT_EQ(s.words.size(), 1u);
    EXPECT_EQ(s.words[0], (std::pair<std::string, std::string>{"copy", "hybrid"}));
    ASSERT_EQ(s.values.size(), 1u);
    EXPECT_EQ(s.values[0], (std::pair<std::string, long>{"ipc_threshold", 4096}));
}

TEST(Spec, RejectsMalformedText) {
    Spec s;
    for (const char *bad : {"", ":", "4tuna", "tuna:radix", "tuna:radix=", "tuna:radix=2x", "ipc:copy=a-b", "tuna:radix=4,",
                            "ipc:copy=kernel,copy=1",
                            "tuna:radix=4,radix=5", "tuna:=4", "tu-na", "tuna:radix=99999999999999999999"}) {
        EXPECT_EQ(parse_spec(bad, &s), MPI_ERR_ARG) << "accepted \"" << bad << "\"";
        EXPECT_NE(std::string(tucoll_error_string(MPI_ERR_ARG)).find("spec"), std::string::npos) << bad;
    }
}

AlgorithmInfo fake_algorithm() {
    AlgorithmInfo a;
    a.name = "fake";
    a.params = {{"radix", Bound::constant(2), Bound::procs(), 2, "r"},
                {"block_count", Bound::constant(0), Bound::unbounded(), 32, "b"},
                {"depth", Bound::constant(1), Bound::local_procs(-1), 8, "d"}};
    return a;
}

TEST(Params, DefaultsAreFilledAndClampedIntoRange) {
    Spec s;
    ASSERT_EQ(parse_spec("fake:radix=3", &s), MPI_SUCCESS);
    Params p;
    ASSERT_EQ(resolve_params(fake_algorithm(), s, Scope{5, 4}, &p), MPI_SUCCESS);
    EXPECT_EQ(p.get("radix"), 3);
    EXPECT_EQ(p.get("block_count"), 32);
    EXPECT_EQ(p.get("depth"), 3);  // default 8 clamped to Q-1
    EXPECT_EQ(spec_string(fake_algorithm(), p), "fake:radix=3,block_count=32,depth=3");
}

TEST(Params, OutOfRangeAndUnknownKeysAreErrors) {
    Spec s;
    Params p;
    ASSERT_EQ(parse_spec("fake:radix=6", &s), MPI_SUCCESS);
    EXPECT_EQ(resolve_params(fake_algorithm(), s, Scope{5, 5}, &p), MPI_ERR_ARG);
    EXPECT_NE(std::string(tucoll_error_string(MPI_ERR_ARG)).find("out of range [2, P]"), std::string::npos)
        << tucoll_error_string(MPI_ERR_ARG);
    ASSERT_EQ(parse_spec("fake:radix=1", &s), MPI_SUCCESS);
    EXPECT_EQ(resolve_params(fake_algorithm(), s, Scope{5, 5}, &p), MPI_ERR_ARG);
    ASSERT_EQ(parse_spec("fake:block_count=-1", &s), MPI_SUCCESS);
    EXPECT_EQ(resolve_params(fake_algorithm(), s, Scope{5, 5}, &p), MPI_ERR_ARG);
    ASSERT_EQ(parse_spec("fake:colour=1", &s), MPI_SUCCESS);
    EXPECT_EQ(resolve_params(fake_algorithm(), s, Scope{5, 5}, &p), MPI_ERR_ARG);
    EXPECT_NE(std::string(tucoll_error_string(MPI_ERR_ARG)).find("accepted: radix, block_count, depth"),
              std::string::npos);
}

TEST(Params, BoundsPrintAsFormulas) {
    EXPECT_EQ(Bound::constant(2).str(), "2");
    EXPECT_EQ(Bound::procs().str(), "P");
    EXPECT_EQ(Bound::procs(-1).str(), "P-1");
    EXPECT_EQ(Bound::local_procs().str(), "Q");
    EXPECT_EQ(Bound::unbounded().str(), "inf");
}

TEST(Selection, ExplicitSpecBeatsEnvironmentBeatsDefault) {
    const auto &reg = alltoallv::registry();
    Selection sel;
    ASSERT_EQ(select_algorithm(reg, nullptr, nullptr, Scope{4, 4}, &sel), MPI_SUCCESS);
    EXPECT_EQ(sel.spec, reg.default_spec());
    EXPECT_STREQ(sel.source, "default");
    ASSERT_EQ(select_algorithm(reg, nullptr, "", Scope{4, 4}, &sel), MPI_SUCCESS);
    EXPECT_STREQ(sel.source, "default");
    ASSERT_EQ(select_algorithm(reg, "", "scattered:block_count=2", Scope{4, 4}, &sel), MPI_SUCCESS);
    EXPECT_EQ(sel.spec, "scattered:block_count=2");
    EXPECT_STREQ(sel.source, "TUCOLL_ALLTOALLV");
    ASSERT_EQ(select_algorithm(reg, "pairwise", "scattered:block_count=2", Scope{4, 4}, &sel), MPI_SUCCESS);
    EXPECT_EQ(sel.spec, "pairwise");
    EXPECT_STREQ(sel.source, "call");
    EXPECT_EQ(select_algorithm(reg, nullptr, "nonexistent", Scope{4, 4}, &sel), MPI_ERR_ARG);
    EXPECT_NE(std::string(tucoll_error_string(MPI_ERR_ARG)).find("TUCOLL_ALLTOALLV=nonexistent"), std::string::npos)
        << tucoll_error_string(MPI_ERR_ARG);
}

TEST(Registry, NamesAreUniqueIdentifiersWithSummaries) {
    for (const RegistryBase *reg : all_registries()) {
        std::set<std::string> seen;
        for (size_t i = 0; i < reg->size(); ++i) {
            const AlgorithmInfo &a = reg->info(i);
            EXPECT_TRUE(seen.insert(a.name).second) << "duplicate " << a.name;
            Spec s;
            EXPECT_EQ(parse_spec(a.name, &s), MPI_SUCCESS) << a.name;
            EXPECT_FALSE(a.summary.empty()) << a.name;
            EXPECT_FALSE(a.constraints.empty()) << a.name;
            for (const ParamSpec &p : a.params) EXPECT_FALSE(p.doc.empty()) << a.name << "." << p.name;
        }
        Selection sel;
        EXPECT_EQ(resolve_spec(*reg, reg->default_spec(), Scope{1, 1}, &sel), MPI_SUCCESS) << reg->collective();
    }
}

TEST(Registry, CApiAndJsonDescribeTheSameAlgorithms) {
    const auto &reg = alltoallv::registry();
    ASSERT_EQ(tucoll_num_algorithms("alltoallv"), static_cast<int>(reg.size()));
    EXPECT_EQ(tucoll_num_algorithms("nonexistent"), -1);
    EXPECT_EQ(tucoll_algorithm_name("alltoallv", -1), nullptr);
    EXPECT_EQ(tucoll_algorithm_name("alltoallv", static_cast<int>(reg.size())), nullptr);
    const nlohmann::json j = nlohmann::json::parse(tucoll_registry_json());
    const auto &algs = j["collectives"]["alltoallv"]["algorithms"];
    ASSERT_EQ(algs.size(), reg.size());
    for (size_t i = 0; i < reg.size(); ++i) {
        EXPECT_STREQ(tucoll_algorithm_name("alltoallv", static_cast<int>(i)), reg[i].name.c_str());
        EXPECT_EQ(algs[i]["name"], reg[i].name);
        EXPECT_EQ(algs[i]["params"].size(), reg[i].params.size());
    }
    EXPECT_EQ(j["collectives"]["alltoallv"]["env"], "TUCOLL_ALLTOALLV");
    EXPECT_STREQ(tucoll_algorithm_params("alltoallv", "scattered"),
                 "block_count in [0, inf], default 32: rounds per batch; 0 (or >= P-1) posts all rounds at once; "
                 "default as MPICH's throttle\n");
    EXPECT_STREQ(tucoll_algorithm_params("alltoallv", "linear"), "");
    EXPECT_EQ(tucoll_algorithm_params("alltoallv", "nonexistent"), nullptr);
}

TEST(Registry, CheckSpecValidatesWithoutRunning) {
    EXPECT_EQ(tucoll_check_spec("alltoallv", "scattered:block_count=4", 8), MPI_SUCCESS);
    EXPECT_EQ(tucoll_check_spec("alltoallv", "scattered:block_count=-4", 8), MPI_ERR_ARG);
    EXPECT_EQ(tucoll_check_spec("alltoallv", "nope", 8), MPI_ERR_ARG);
    EXPECT_NE(std::string(tucoll_error_string(MPI_ERR_ARG)).find("registered: vendor, linear"), std::string::npos);
    EXPECT_EQ(tucoll_check_spec("nonexistent", "vendor", 8), MPI_ERR_ARG);
    EXPECT_EQ(tucoll_check_spec("alltoallv", nullptr, 8), MPI_ERR_ARG);
    EXPECT_EQ(tucoll_check_spec("alltoallv", "vendor", 0), MPI_ERR_ARG);
}

TEST(SpecVariants, CoverEveryAlgorithmAndParameterEdge) {
    const auto specs = spec_variants(alltoallv::registry(), Scope{8, 8});
    for (const auto &alg : alltoallv::registry()) {
        EXPECT_NE(std::find(specs.begin(), specs.end(), alg.name), specs.end()) << alg.name;
    }
    EXPECT_NE(std::find(specs.begin(), specs.end(), "scattered:block_count=0"), specs.end());
    EXPECT_NE(std::find(specs.begin(), specs.end(), "scattered:block_count=9"), specs.end());
}

}  // namespace
}  // namespace tucoll::test
