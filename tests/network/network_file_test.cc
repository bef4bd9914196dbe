#include "network/network_file.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

std::string Shipped(const std::string& name) {
  return std::string(PROJECTOR_SOURCE_DIR) + "/networks/" + name;
}

// Writes `text` to a fresh file named `name` in the test's temporary directory.
std::string WriteFile(const std::string& name, const std::string& text) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("projector_network_test_" + std::to_string(::getpid())) /
                                     name;
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
  return path.string();
}

absl::Status LoadError(const std::string& name, const std::string& text) {
  return LoadNetworkFile(WriteFile(name, text)).status();
}

TEST(NetworkFileTest, ReadsTheShippedMesh) {
  const absl::StatusOr<NetworkSpec> spec = LoadNetworkFile(Shipped("mesh4x4.json"));
  ASSERT_THAT(spec, IsOk());
  ASSERT_EQ(spec->dimensions.size(), 1u);
  const NetworkDimension& dim = spec->dimensions[0];
  EXPECT_EQ(dim.topology, TopologyKind::kMesh2d);
  EXPECT_EQ(dim.npus, 16);  // x·y when npus is left out
  EXPECT_DOUBLE_EQ(dim.link_bandwidth.value(), 100e9);
  EXPECT_DOUBLE_EQ(dim.link_latency.value(), 500e-9);
  EXPECT_EQ(dim.links, 1);
  EXPECT_DOUBLE_EQ(dim.efficiency, 1.0);
}

TEST(NetworkFileTest, ReadsAstraSimNetworkYaml) {
  const absl::StatusOr<NetworkSpec> spec = LoadNetworkFile(Shipped("astra_ring_fc_switch.yml"));
  ASSERT_THAT(spec, IsOk());
  EXPECT_EQ(spec->name, "astra_ring_fc_switch");
  ASSERT_EQ(spec->dimensions.size(), 3u);
  EXPECT_EQ(spec->NpuCount(), 64);
  EXPECT_EQ(spec->dimensions[0].topology, TopologyKind::kRing);
  EXPECT_TRUE(spec->dimensions[0].bidirectional);
  EXPECT_EQ(spec->dimensions[1].topology, TopologyKind::kFullyConnected);
  EXPECT_EQ(spec->dimensions[2].topology, TopologyKind::kSwitch);
  EXPECT_DOUBLE_EQ(spec->dimensions[2].link_bandwidth.value(), 50e9);  // GB/s = B/ns
  EXPECT_DOUBLE_EQ(spec->dimensions[2].link_latency.value(), 2000e-9);
}

TEST(NetworkFileTest, ToolFormatInYamlAndJsonRoundTrip) {
  const absl::StatusOr<NetworkSpec> yaml = LoadNetworkFile(WriteFile(
      "tool.yaml",
      "dimensions:\n"
      "  - {topology: ring, npus: 4, bidirectional: false, bandwidth_gbps: 50, latency_ns: 10}\n"
      "  - {topology: fat_tree, npus: 64, radix: 16, oversubscription: 2, bandwidth_gbps: 25,\n"
      "     latency_ns: 1000, efficiency: 0.8, links: 2, label: \"IB\"}\n"));
  ASSERT_THAT(yaml, IsOk());
  EXPECT_FALSE(yaml->dimensions[0].bidirectional);
  EXPECT_EQ(yaml->dimensions[1].radix, 16);
  EXPECT_DOUBLE_EQ(yaml->dimensions[1].oversubscription, 2);
  EXPECT_EQ(yaml->dimensions[1].label, "IB");
  const absl::StatusOr<NetworkSpec> back = NetworkFromJson(NetworkSpecJson(*yaml), "echo");
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(NetworkSpecJson(*back), NetworkSpecJson(*yaml));
}

TEST(NetworkFileTest, MeshWhoseNpusAreNotXTimesY) {
  EXPECT_THAT(
      LoadError("m.json", R"({"dimensions": [{"topology": "mesh2d", "x": 4, "y": 4,
      "npus": 15, "bandwidth_gbps": 100, "latency_ns": 500}]})"),
      StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("m.json: /dimensions/0/npus"),
                                                         HasSubstr("15 is not x*y = 4*4 = 16"))));
}

TEST(NetworkFileTest, UnknownTopologySuggestsTheClosest) {
  EXPECT_THAT(LoadError("t.json", R"({"dimensions": [{"topology": "torus", "npus": 8,
      "bandwidth_gbps": 100, "latency_ns": 500}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/dimensions/0/topology"), HasSubstr("'torus'"),
                             HasSubstr("did you mean 'torus2d'"),
                             HasSubstr("accepted: ring, fully_connected, switch"))));
}

TEST(NetworkFileTest, ZeroBandwidthIsRefused) {
  EXPECT_THAT(LoadError("z.json", R"({"dimensions": [{"topology": "switch", "npus": 8,
      "bandwidth_gbps": 0, "latency_ns": 500}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("z.json: /dimensions/0/bandwidth_gbps")));
}

TEST(NetworkFileTest, MisspelledKeyIsRefusedWithASuggestion) {
  EXPECT_THAT(LoadError("k.json", R"({"dimensions": [{"topology": "switch", "npus": 8,
      "bandwith_gbps": 100, "bandwidth_gbps": 100, "latency_ns": 500}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/dimensions/0/bandwith_gbps"),
                             HasSubstr("did you mean 'bandwidth_gbps'"))));
}

TEST(NetworkFileTest, KeyOfAnotherTopologyIsRefused) {
  EXPECT_THAT(LoadError("x.json", R"({"dimensions": [{"topology": "ring", "npus": 8, "x": 2,
      "bandwidth_gbps": 100, "latency_ns": 500}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/dimensions/0/x"),
                             HasSubstr("applies to mesh2d and torus2d only"))));
}

TEST(NetworkFileTest, MissingDimensionsNamesBothFormats) {
  EXPECT_THAT(LoadError("e.json", R"({"name": "empty"})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("e.json: /dimensions"), HasSubstr("npus_count"))));
  EXPECT_THAT(LoadError("n.json", R"({"dimensions": []})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no dimension")));
}

TEST(NetworkFileTest, FatTreeTooLargeForItsRadix) {
  // radix 8: 4 down ports x 4 leaves per pod x 8 pods = 128 NPUs at most.
  EXPECT_THAT(LoadError("f.json", R"({"dimensions": [{"topology": "fat_tree", "npus": 129,
      "radix": 8, "bandwidth_gbps": 50, "latency_ns": 500}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/dimensions/0/npus"), HasSubstr("at most 128"))));
}

TEST(NetworkFileTest, AstraListsOfDifferentLengths) {
  EXPECT_THAT(LoadError("a.yml",
                        "topology: [Ring, Switch]\nnpus_count: [4]\n"
                        "bandwidth: [50, 50]\nlatency: [500, 500]\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("a.yml:2:1: /npus_count"), HasSubstr("1 entries"))));
  EXPECT_THAT(LoadError("b.yml",
                        "topology: [Ring, Swich]\nnpus_count: [4, 2]\n"
                        "bandwidth: [50, 50]\nlatency: [500, 500]\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/topology/1"), HasSubstr("did you mean 'Switch'"))));
}

TEST(NetworkFileTest, YamlSyntaxErrorNamesLine) {
  EXPECT_THAT(LoadError("s.yaml", "dimensions:\n  - {topology: ring\n"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("s.yaml:")));
}

TEST(NetworkFileTest, MissingFileIsNotFound) {
  EXPECT_THAT(LoadNetworkFile("/nonexistent/net.json"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/net.json")));
}

}  // namespace
}  // namespace projector

namespace projector {
namespace {

TEST(NetworkFileTest, RailOptimizedOnlyForAnOuterSwitchOrFatTree) {
  EXPECT_THAT(
      LoadError("r0.json", R"({"dimensions": [{"topology": "switch", "npus": 8,
      "rail_optimized": false, "bandwidth_gbps": 100, "latency_ns": 500}]})"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("/dimensions/0/rail_optimized"), HasSubstr("no inner NPUs"))));
  EXPECT_THAT(LoadError("r1.json", R"({"dimensions": [{"topology": "switch", "npus": 8,
      "bandwidth_gbps": 100, "latency_ns": 500}, {"topology": "ring", "npus": 4,
      "rail_optimized": false, "bandwidth_gbps": 50, "latency_ns": 500}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/dimensions/1/rail_optimized"),
                             HasSubstr("applies to switch and fat_tree only"))));
  // The shared tree holds every NPU of the inner dimensions: 8 x 32 = 256 > 128 for radix 8.
  EXPECT_THAT(LoadError("r2.json", R"({"dimensions": [{"topology": "switch", "npus": 8,
      "bandwidth_gbps": 100, "latency_ns": 500}, {"topology": "fat_tree", "npus": 32,
      "radix": 8, "rail_optimized": false, "bandwidth_gbps": 50, "latency_ns": 500}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/dimensions/1/npus"), HasSubstr("256 NPUs"))));
}

}  // namespace
}  // namespace projector
