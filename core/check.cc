#include <cstdio>
#include <cstdlib>

#include "core/status_macros.h"

namespace projector::internal {

void CheckFailed(const char* cond, const char* file, int line) {
  std::fprintf(stderr, "internal error: check failed: %s at %s:%d\n", cond, file, line);
  std::abort();
}

}  // namespace projector::internal
