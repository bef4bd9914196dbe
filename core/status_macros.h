// Status propagation macros (Debian's Abseil 20220623 has none), prefixed to avoid clashes
// with later Abseil versions.
#ifndef PROJECTOR_CORE_STATUS_MACROS_H_
#define PROJECTOR_CORE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define PROJECTOR_RETURN_IF_ERROR(expr)                     \
  do {                                                      \
    if (::absl::Status projector_s_ = (expr); !projector_s_.ok()) { \
      return projector_s_;                                  \
    }                                                       \
  } while (0)

#define PROJECTOR_STATUS_CONCAT_INNER_(a, b) a##b
#define PROJECTOR_STATUS_CONCAT_(a, b) PROJECTOR_STATUS_CONCAT_INNER_(a, b)

// PROJECTOR_ASSIGN_OR_RETURN(lhs, expr): evaluates a StatusOr; returns its status on error,
// else moves the value into lhs (which may be a declaration such as `auto x`).
#define PROJECTOR_ASSIGN_OR_RETURN(lhs, expr) \
  PROJECTOR_ASSIGN_OR_RETURN_IMPL_(PROJECTOR_STATUS_CONCAT_(projector_so_, __LINE__), lhs, expr)
#define PROJECTOR_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                     \
  if (!tmp.ok()) return std::move(tmp).status();         \
  lhs = std::move(tmp).value()

// Programmer-error check: never reachable from user input.
#define PROJECTOR_CHECK(cond)                                                        \
  do {                                                                               \
    if (!(cond)) ::projector::internal::CheckFailed(#cond, __FILE__, __LINE__);      \
  } while (0)

namespace projector::internal {
[[noreturn]] void CheckFailed(const char* cond, const char* file, int line);
}  // namespace projector::internal

#endif  // PROJECTOR_CORE_STATUS_MACROS_H_
