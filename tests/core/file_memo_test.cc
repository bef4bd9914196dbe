#include "core/file_memo.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::HasSubstr;

// A file in the test's temporary directory with the given bytes.
std::string WriteFile(const std::string& name, const std::string& bytes) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("projector_file_memo_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path) << bytes;
  return path;
}

// A loader that counts its calls and returns the file's size, failing on "bad".
struct CountingLoader {
  int* calls;
  absl::StatusOr<size_t> operator()(const std::string& path) const {
    ++*calls;
    absl::StatusOr<std::string> bytes = ReadTextFile(path);
    if (!bytes.ok()) return bytes.status();
    if (*bytes == "bad") return absl::InvalidArgumentError(path + ": bad");
    return bytes->size();
  }
};

// The same path and bytes load once; changed bytes load again; each path is its own entry.
TEST(FileMemoTest, LoadsOncePerPathAndBytes) {
  int calls = 0;
  const std::string a = WriteFile("a.json", "12345");
  EXPECT_EQ(*LoadFileMemoised<size_t>(a, CountingLoader{&calls}), 5u);
  EXPECT_EQ(*LoadFileMemoised<size_t>(a, CountingLoader{&calls}), 5u);
  EXPECT_EQ(calls, 1);
  WriteFile("a.json", "1234567");
  EXPECT_EQ(*LoadFileMemoised<size_t>(a, CountingLoader{&calls}), 7u);
  EXPECT_EQ(calls, 2);
  const std::string b = WriteFile("b.json", "1234567");
  EXPECT_EQ(*LoadFileMemoised<size_t>(b, CountingLoader{&calls}), 7u);
  EXPECT_EQ(calls, 3);
}

// Failures are never kept: every call reports the loader's error, and a missing file is the
// loader's to name.
TEST(FileMemoTest, FailuresAreReportedEveryTime) {
  int calls = 0;
  const std::string bad = WriteFile("bad.json", "bad");
  for (int i = 0; i < 2; ++i) {
    EXPECT_THAT(LoadFileMemoised<size_t>(bad, CountingLoader{&calls}),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bad.json: bad")));
  }
  EXPECT_EQ(calls, 2);
  EXPECT_THAT(LoadFileMemoised<size_t>(bad + ".missing", CountingLoader{&calls}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("cannot open file")));
  EXPECT_EQ(calls, 3);
}

}  // namespace
}  // namespace projector
