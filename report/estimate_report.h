// Renderings of single-op estimates (studies/estimate.h): a short text block and JSON
// ({gpu, clock_mhz, op, backend, the shape, time_s, the rate, bound, ...}).
#ifndef PROJECTOR_REPORT_ESTIMATE_REPORT_H_
#define PROJECTOR_REPORT_ESTIMATE_REPORT_H_

#include <string>

#include "nlohmann/json.hpp"
#include "studies/convnet_training.h"
#include "studies/estimate.h"

namespace projector {

// `project estimate convnet`: a convolutional network's data-parallel training step.
std::string ConvNetTrainingText(const ConvNetTraining& t);
nlohmann::json ConvNetTrainingJson(const ConvNetTraining& t);
std::string GemmEstimateText(const GemmOpEstimate& e);
nlohmann::json GemmEstimateJson(const GemmOpEstimate& e);
std::string AttentionEstimateText(const AttentionOpEstimate& e);
nlohmann::json AttentionEstimateJson(const AttentionOpEstimate& e);
std::string CollectiveEstimateText(const CollectiveOpEstimate& e);
nlohmann::json CollectiveEstimateJson(const CollectiveOpEstimate& e);
// A collective on a network file (--network): time, algorithm and bus bandwidth, the busiest
// link and each phase (docs/network.md has the JSON fields).
std::string NetworkCollectiveEstimateText(const NetworkCollectiveOpEstimate& e);
nlohmann::json NetworkCollectiveEstimateJson(const NetworkCollectiveOpEstimate& e);
// Under ASTRA-sim's semantics: the time, the bandwidths (nccl-tests definitions) and the system
// it read. JSON fields: network, network_npus, semantics ("astra"), op, bytes, algorithm,
// congestion, time_s, time_us, algorithm_bandwidth_gbps, bus_bandwidth_gbps, messages, events,
// system {source, preferred_dataset_splits, active_chunks_per_dimension, endpoint_delay_ns,
// local_mem_bw_gbps, gigabyte}.
std::string AstraCollectiveEstimateText(const AstraCollectiveOpEstimate& e);
nlohmann::json AstraCollectiveEstimateJson(const AstraCollectiveOpEstimate& e);
// Collectives at once (--concurrent): each one alone and together, and the slowdown.
std::string ConcurrentCollectivesText(const ConcurrentCollectivesEstimate& e);
nlohmann::json ConcurrentCollectivesJson(const ConcurrentCollectivesEstimate& e);

}  // namespace projector

#endif  // PROJECTOR_REPORT_ESTIMATE_REPORT_H_
