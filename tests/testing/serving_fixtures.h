// Deployments of library models and GPUs for the serving tests.
#ifndef PROJECTOR_TESTS_TESTING_SERVING_FIXTURES_H_
#define PROJECTOR_TESTS_TESTING_SERVING_FIXTURES_H_

#include <cstdint>
#include <string>

#include "hw_profiles/hardware_profile.h"
#include "models/model_spec.h"
#include "serving/pass_cost.h"

namespace projector::testing {

// `model` on `gpu` (library names) at tp x pp, bf16 weights and KV, the default backends.
inline Deployment LibraryDeployment(const std::string& model, const std::string& gpu,
                                    int64_t tp = 1, int64_t pp = 1) {
  Deployment d;
  d.model = *ResolveModel(model);
  d.hw = *ResolveHardwareProfile(gpu);
  d.tp = tp;
  d.pp = pp;
  return d;
}

}  // namespace projector::testing

#endif  // PROJECTOR_TESTS_TESTING_SERVING_FIXTURES_H_
