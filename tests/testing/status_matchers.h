// gMock matchers for absl::Status / StatusOr (Debian's Abseil ships none): IsOk(),
// StatusIs(code, message_matcher).
#ifndef PROJECTOR_TESTS_TESTING_STATUS_MATCHERS_H_
#define PROJECTOR_TESTS_TESTING_STATUS_MATCHERS_H_

#include <cmath>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"

namespace projector::testing {

inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

MATCHER(IsOk, "is OK") {
  const absl::Status& s = GetStatus(arg);
  if (!s.ok()) *result_listener << "status: " << s.ToString();
  return s.ok();
}

MATCHER_P2(StatusIs, code, message_matcher, "") {
  const absl::Status& s = GetStatus(arg);
  *result_listener << "status: " << s.ToString();
  return s.code() == code &&
         ::testing::Matches(::testing::Matcher<const std::string&>(message_matcher))(
             std::string(s.message()));
}

// |actual - expected| <= rel · |expected|.
MATCHER_P2(IsNearRel, expected, rel, "") {
  double a = static_cast<double>(arg);
  double e = static_cast<double>(expected);
  *result_listener << "actual " << a << ", expected " << e << " within " << rel * 100 << "%";
  return std::fabs(a - e) <= rel * std::fabs(e);
}

}  // namespace projector::testing

#endif  // PROJECTOR_TESTS_TESTING_STATUS_MATCHERS_H_
