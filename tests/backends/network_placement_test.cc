#include "backends/simulate/network_placement.h"

#include "core/op_shapes.h"
#include "gtest/gtest.h"

namespace projector {
namespace {

GroupPlacement Place(int64_t size, int64_t stride, int64_t gpus_per_node = 8) {
  return PlaceGroup({.size = size, .stride = stride}, gpus_per_node);
}

TEST(PlaceGroupTest, TensorParallelStaysInsideANode) {
  EXPECT_EQ(Place(8, 1).ranks_per_node, 8);
  EXPECT_EQ(Place(8, 1).nodes_spanned, 1);
  EXPECT_EQ(Place(4, 1).ranks_per_node, 4);
  EXPECT_EQ(Place(4, 1).nodes_spanned, 1);
}

TEST(PlaceGroupTest, DataParallelStridedByANodeSpansOneNodePerRank) {
  // DP stride = TP·CP = 8 on 8-GPU nodes: one rank per node.
  EXPECT_EQ(Place(16, 8).ranks_per_node, 1);
  EXPECT_EQ(Place(16, 8).nodes_spanned, 16);
  EXPECT_EQ(Place(4, 16).ranks_per_node, 1);
  EXPECT_EQ(Place(4, 16).nodes_spanned, 4);
}

TEST(PlaceGroupTest, ExpertParallelStridedByTensorParallel) {
  // EP=8 strided by TP=2: G/stride = 4 ranks per node over 2 nodes.
  EXPECT_EQ(Place(8, 2).ranks_per_node, 4);
  EXPECT_EQ(Place(8, 2).nodes_spanned, 2);
  // TP=1, DP=64: 8 per node, 8 nodes; 12 ranks at stride 1: ceil(12/8) = 2 nodes.
  EXPECT_EQ(Place(64, 1).nodes_spanned, 8);
  EXPECT_EQ(Place(12, 1).nodes_spanned, 2);
}

TEST(PlaceGroupTest, SmallGroupsAndOddNodes) {
  EXPECT_EQ(Place(1, 1).ranks_per_node, 1);
  EXPECT_EQ(Place(1, 1).nodes_spanned, 1);
  EXPECT_EQ(Place(2, 4).ranks_per_node, 2);  // PP pair 4 apart: same node
  EXPECT_EQ(Place(2, 8).nodes_spanned, 2);   // PP pair on neighbouring nodes
  EXPECT_EQ(Place(4, 1, 4).ranks_per_node, 4);
  EXPECT_EQ(Place(8, 1, 1).nodes_spanned, 8);  // one GPU per node
  EXPECT_EQ(Place(8, 3).ranks_per_node, 2);    // 8/3 rounds down
}

}  // namespace
}  // namespace projector
