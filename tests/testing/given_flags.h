// FlagValues as a user would give them, for tests of the layers that read flags.
#ifndef PROJECTOR_TESTS_TESTING_GIVEN_FLAGS_H_
#define PROJECTOR_TESTS_TESTING_GIVEN_FLAGS_H_

#include <initializer_list>
#include <utility>
#include <vector>

#include "core/flag_values.h"

namespace projector::testing {

// {{"tp", "8"}, {"fsdp", "true"}}: each flag given with its text, in order.
inline FlagValues GivenFlags(std::initializer_list<std::pair<const char*, const char*>> given) {
  FlagValues flags;
  for (auto [name, value] : given) flags.Add(name, value);
  return flags;
}
inline FlagValues GivenFlags(const std::vector<std::pair<const char*, const char*>>& given) {
  FlagValues flags;
  for (auto [name, value] : given) flags.Add(name, value);
  return flags;
}

}  // namespace projector::testing

#endif  // PROJECTOR_TESTS_TESTING_GIVEN_FLAGS_H_
