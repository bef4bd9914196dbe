#include "core/suggest.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace projector {
namespace {

// Distances by hand: kitten -> sitting is the classic 3 (k->s, e->i, +g); case is ignored.
TEST(EditDistanceTest, CountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("abc", ""), 3u);
  EXPECT_EQ(EditDistance("H100-SXM", "h100-sxm"), 0u);
  EXPECT_EQ(EditDistance("seqlen", "seq-len"), 1u);
}

TEST(ClosestNameTest, SuggestsLikelySlipsOnly) {
  const std::vector<std::string> commands = {"estimate", "validate", "search", "calibrate"};
  EXPECT_EQ(ClosestName("serch", commands), "search");     // distance 1, limit 1
  EXPECT_EQ(ClosestName("valdate", commands), "validate");  // distance 1, limit 2
  EXPECT_EQ(ClosestName("xyz", commands), std::nullopt);    // nothing close
  const std::vector<std::string> gpus = {"h100-sxm", "h200-sxm", "mi300x"};
  // Not within distance, but the start of exactly one name.
  EXPECT_EQ(ClosestName("mi30", gpus), "mi300x");
  // The start of two names: ambiguous, no suggestion.
  EXPECT_EQ(ClosestName("h", gpus), std::nullopt);
}

// "llama3-8b" is 2 edits from both; the name that contains it in order wins.
TEST(ClosestNameTest, TiesGoToTheNameThatContainsTheInput) {
  const std::vector<std::string> models = {"llama2-7b", "llama3.1-8b"};
  EXPECT_EQ(ClosestName("llama3-8b", models), "llama3.1-8b");
  EXPECT_EQ(DidYouMean("llama3-8b", models), " (did you mean 'llama3.1-8b'?)");
  EXPECT_EQ(DidYouMean("gpt9", models), "");
}

}  // namespace
}  // namespace projector
