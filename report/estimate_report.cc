#include "report/estimate_report.h"

#include "absl/strings/str_format.h"

namespace projector {
namespace {

using nlohmann::json;

json ContextJson(const EstimateContext& c) {
  return {{"gpu", c.gpu}, {"clock_mhz", c.clock_mhz}, {"backend", c.backend}};
}

std::string_view PassName(AttentionPass pass) {
  return pass == AttentionPass::kForward ? "fwd" : "bwd";
}

}  // namespace

std::string ConvNetTrainingText(const ConvNetTraining& t) {
  const auto ms = [](Seconds s) { return s.value() * 1e3; };
  return absl::StrFormat(
      "%s training on %d x %s, %d images per GPU and step, %s (data parallel)\n"
      "  model       %.3f G multiply-adds per image forward, %.2f M parameters\n"
      "  forward     %10.3f ms\n"
      "  backward    %10.3f ms\n"
      "  all-reduce  %10.3f ms of fp32 gradients, %.3f ms exposed after the backward\n"
      "  optimizer   %10.3f ms (SGD with momentum, fp32 master weights)\n"
      "  step        %10.3f ms\n"
      "  images/s    %10.1f per GPU, %.1f in all\n"
      "  TFLOP/s     %10.1f per GPU (MFU %.1f%%)\n"
      "  activations %10.2f GiB per GPU\n",
      t.network, t.num_gpus, t.gpu, t.images_per_gpu, DTypeName(t.precision),
      t.forward_macs_per_image * 1e-9, t.parameters * 1e-6, ms(t.forward), ms(t.backward),
      ms(t.allreduce), ms(t.exposed_allreduce), ms(t.optimizer), ms(t.step),
      t.images_per_s_per_gpu, t.images_per_s_per_gpu * static_cast<double>(t.num_gpus),
      t.model_tflops_per_gpu, 100.0 * t.mfu, t.activations.value() / Gibibytes(1).value());
}

json ConvNetTrainingJson(const ConvNetTraining& t) {
  return {{"op", "convnet"},
          {"network", t.network},
          {"gpu", t.gpu},
          {"num_gpus", t.num_gpus},
          {"images_per_gpu", t.images_per_gpu},
          {"precision", std::string(DTypeName(t.precision))},
          {"forward_macs_per_image", t.forward_macs_per_image},
          {"parameters", t.parameters},
          {"forward_s", t.forward.value()},
          {"backward_s", t.backward.value()},
          {"allreduce_s", t.allreduce.value()},
          {"exposed_allreduce_s", t.exposed_allreduce.value()},
          {"optimizer_s", t.optimizer.value()},
          {"step_s", t.step.value()},
          {"images_per_s_per_gpu", t.images_per_s_per_gpu},
          {"model_tflops_per_gpu", t.model_tflops_per_gpu},
          {"mfu", t.mfu},
          {"activation_bytes", t.activations.value()}};
}

std::string GemmEstimateText(const GemmOpEstimate& r) {
  const GemmShape& s = r.shape;
  const GemmEstimate& e = r.estimate;
  return absl::StrFormat(
      "GEMM %dx%dx%d batch %d%s %s on %s @ %.0f MHz (%s backend)\n  time      %.3f us\n  "
      "achieved  %.1f TFLOP/s\n  tile      %dx%dx%d, %d waves\n  bound     %s\n",
      s.m, s.n, s.k, s.batch,
      s.kernels > 1 ? absl::StrFormat(" in %d kernels", s.kernels) : std::string(),
      DTypeName(s.dtype), r.context.gpu, r.context.clock_mhz,
      r.context.backend, ToMicroseconds(e.time), r.tflops, e.tile_m, e.tile_n, e.tile_k, e.waves,
      BoundName(e.bound));
}

json GemmEstimateJson(const GemmOpEstimate& r) {
  const GemmShape& s = r.shape;
  const GemmEstimate& e = r.estimate;
  json j = ContextJson(r.context);
  j.update({{"op", "gemm"},
            {"m", s.m},
            {"n", s.n},
            {"k", s.k},
            {"batch", s.batch},
            {"kernels", s.kernels},
            {"dtype", std::string(DTypeName(s.dtype))},
            {"time_s", e.time.value()},
            {"tflops", r.tflops},
            {"bound", std::string(BoundName(e.bound))},
            {"tile", {e.tile_m, e.tile_n, e.tile_k}},
            {"waves", e.waves},
            {"clock_scaled_time_s", e.clock_scaled_time.value()}});
  return j;
}

std::string AttentionEstimateText(const AttentionOpEstimate& r) {
  const AttentionShape& s = r.shape;
  const AttentionEstimate& e = r.estimate;
  return absl::StrFormat(
      "Attention %s B%d H%d/%d Sq%d Skv%d D%d/%d %s %s on %s @ %.0f MHz (%s backend)\n  time      "
      "%.3f us\n  achieved  %.1f TFLOP/s\n  tile      %dx%d, %d waves\n  bound     %s\n",
      PassName(r.pass), s.batch, s.num_q_heads, s.num_kv_heads, s.seq_q, s.seq_kv, s.qk_head_dim,
      s.v_head_dim, s.causal ? "causal" : "non-causal", DTypeName(s.dtype), r.context.gpu,
      r.context.clock_mhz, r.context.backend, ToMicroseconds(e.time), r.tflops, e.tile_q, e.tile_kv,
      e.waves, BoundName(e.bound));
}

json AttentionEstimateJson(const AttentionOpEstimate& r) {
  const AttentionShape& s = r.shape;
  const AttentionEstimate& e = r.estimate;
  json j = ContextJson(r.context);
  j.update({{"op", "attention"},
            {"pass", std::string(PassName(r.pass))},
            {"batch", s.batch},
            {"heads", s.num_q_heads},
            {"kv_heads", s.num_kv_heads},
            {"seq_q", s.seq_q},
            {"seq_kv", s.seq_kv},
            {"qk_head_dim", s.qk_head_dim},
            {"v_head_dim", s.v_head_dim},
            {"causal", s.causal},
            {"dtype", std::string(DTypeName(s.dtype))},
            {"time_s", e.time.value()},
            {"tflops", r.tflops},
            {"bound", std::string(BoundName(e.bound))},
            {"tile", {e.tile_q, e.tile_kv}},
            {"waves", e.waves},
            {"clock_scaled_time_s", e.clock_scaled_time.value()}});
  return j;
}

std::string CollectiveEstimateText(const CollectiveOpEstimate& r) {
  const CollectiveOp& op = r.op;
  const CollectiveEstimate& e = r.estimate;
  return absl::StrFormat(
      "%s of %.4g bytes over %d ranks (stride %d) on %s, %d per node (%s backend)\n  time      "
      "%.3f us\n  bus bw    %.1f GB/s\n  algorithm %s\n  placement %d nodes x %d ranks\n  bound "
      "    %s\n",
      CollectiveKindName(op.kind), op.bytes.value(), op.group.size, op.group.stride, r.context.gpu,
      r.context.gpus_per_node, r.context.backend, ToMicroseconds(e.time),
      ToGigabytesPerSecond(e.bus_bandwidth), CollectiveAlgorithmName(e.algorithm), e.nodes_spanned,
      e.ranks_per_node, BoundName(e.bound));
}

json CollectiveEstimateJson(const CollectiveOpEstimate& r) {
  const CollectiveOp& op = r.op;
  const CollectiveEstimate& e = r.estimate;
  json j = ContextJson(r.context);
  j.update({{"op", std::string(CollectiveKindName(op.kind))},
            {"bytes", op.bytes.value()},
            {"ranks", op.group.size},
            {"stride", op.group.stride},
            {"time_s", e.time.value()},
            {"bus_bandwidth_gbps", ToGigabytesPerSecond(e.bus_bandwidth)},
            {"algorithm", std::string(CollectiveAlgorithmName(e.algorithm))},
            {"nodes_spanned", e.nodes_spanned},
            {"ranks_per_node", e.ranks_per_node},
            {"bound", std::string(BoundName(e.bound))}});
  return j;
}

std::string NetworkCollectiveEstimateText(const NetworkCollectiveOpEstimate& r) {
  const CollectiveOp& op = r.op;
  const NetworkCollectiveEstimate& e = r.estimate;
  std::string out = absl::StrFormat(
      "%s of %.4g bytes over %d ranks (stride %d) on network %s (%d NPUs), congestion %s, "
      "library %s%s\n"
      "  time       %.3f us\n  alg bw     %.1f GB/s\n  bus bw     %.1f GB/s\n"
      "  algorithm  %s%s\n",
      CollectiveKindName(op.kind), op.bytes.value(), op.group.size, op.group.stride, r.network,
      r.network_npus, CongestionName(r.congestion), CollectiveLibraryName(r.library),
      r.chunks > 1 ? absl::StrFormat(", %d chunks", r.chunks) : "", ToMicroseconds(e.time),
      ToGigabytesPerSecond(e.algorithm_bandwidth), ToGigabytesPerSecond(e.bus_bandwidth),
      CollectiveAlgorithmName(e.algorithm),
      e.protocol.empty() ? "" : absl::StrCat(", protocol ", e.protocol));
  if (!r.busiest_link.empty()) {
    absl::StrAppendFormat(&out, "  busiest    %s, %.0f%% busy\n", r.busiest_link,
                          100 * e.busiest_utilisation);
  }
  out += "  phases\n";
  for (const CollectivePhase& p : e.phases) {
    absl::StrAppendFormat(&out, "    %-80s %12.3f us\n", p.what, ToMicroseconds(p.time));
  }
  return out;
}

namespace {

// nccl-tests: algorithm bandwidth S / t, bus bandwidth x its factor.
std::pair<double, double> AstraBandwidths(const AstraCollectiveOpEstimate& r) {
  const double t = r.result.time.value();
  const double alg = t > 0 ? r.op.bytes.value() / t / 1e9 : 0.0;
  return {alg, alg * BusBandwidthFactor(r.op.kind, r.network_npus)};
}

}  // namespace

std::string AstraCollectiveEstimateText(const AstraCollectiveOpEstimate& r) {
  const auto [alg, bus] = AstraBandwidths(r);
  const AstraSystem& s = r.system;
  return absl::StrFormat(
      "%s of %.4g bytes over %d NPUs on network %s, ASTRA-sim's semantics (%s), congestion %s\n"
      "  time       %.3f us\n  alg bw     %.1f GB/s\n  bus bw     %.1f GB/s\n"
      "  algorithm  %s\n"
      "  system     %d chunks, %d in flight, endpoint delay %.0f ns, local-mem-bw %g GB/s, "
      "link GB/s read as %s\n"
      "  messages   %d (%d events)\n",
      CollectiveKindName(r.op.kind), r.op.bytes.value(), r.network_npus, r.network, s.source,
      CongestionName(r.congestion), ToMicroseconds(r.result.time), alg, bus,
      CollectiveAlgorithmName(r.algorithm), s.dataset_splits, s.active_chunks,
      s.endpoint_delay.value() * 1e9, s.local_mem_bw_gbps,
      s.binary_gigabytes ? "2^30 B/s" : "10^9 B/s", r.result.messages, r.result.events);
}

json AstraCollectiveEstimateJson(const AstraCollectiveOpEstimate& r) {
  const auto [alg, bus] = AstraBandwidths(r);
  const AstraSystem& s = r.system;
  return {{"network", r.network},
          {"network_npus", r.network_npus},
          {"semantics", "astra"},
          {"op", std::string(CollectiveKindName(r.op.kind))},
          {"bytes", r.op.bytes.value()},
          {"algorithm", std::string(CollectiveAlgorithmName(r.algorithm))},
          {"congestion", std::string(CongestionName(r.congestion))},
          {"time_s", r.result.time.value()},
          {"time_us", ToMicroseconds(r.result.time)},
          {"algorithm_bandwidth_gbps", alg},
          {"bus_bandwidth_gbps", bus},
          {"messages", r.result.messages},
          {"events", r.result.events},
          {"system",
           {{"source", s.source},
            {"preferred_dataset_splits", s.dataset_splits},
            {"active_chunks_per_dimension", s.active_chunks},
            {"endpoint_delay_ns", s.endpoint_delay.value() * 1e9},
            {"local_mem_bw_gbps", s.local_mem_bw_gbps},
            {"gigabyte", s.binary_gigabytes ? "binary" : "decimal"}}}};
}

json NetworkCollectiveEstimateJson(const NetworkCollectiveOpEstimate& r) {
  const CollectiveOp& op = r.op;
  const NetworkCollectiveEstimate& e = r.estimate;
  json phases = json::array();
  for (const CollectivePhase& p : e.phases) {
    phases.push_back({{"what", p.what},
                      {"dimension", p.dimension},
                      {"algorithm", std::string(CollectiveAlgorithmName(p.algorithm))},
                      {"steps", p.steps},
                      {"time_us", ToMicroseconds(p.time)},
                      {"latency_us", ToMicroseconds(p.latency)},
                      {"busiest_link_utilisation", p.busiest_utilisation}});
  }
  return {{"network", r.network},
          {"network_npus", r.network_npus},
          {"op", std::string(CollectiveKindName(op.kind))},
          {"bytes", op.bytes.value()},
          {"ranks", op.group.size},
          {"stride", op.group.stride},
          {"congestion", std::string(CongestionName(r.congestion))},
          {"chunks", r.chunks},
          {"library", std::string(CollectiveLibraryName(r.library))},
          {"protocol", e.protocol},
          {"algorithm", std::string(CollectiveAlgorithmName(e.algorithm))},
          {"time_s", e.time.value()},
          {"time_us", ToMicroseconds(e.time)},
          {"algorithm_bandwidth_gbps", ToGigabytesPerSecond(e.algorithm_bandwidth)},
          {"bus_bandwidth_gbps", ToGigabytesPerSecond(e.bus_bandwidth)},
          {"busiest_link", r.busiest_link},
          {"busiest_link_utilisation", e.busiest_utilisation},
          {"phases", std::move(phases)}};
}

std::string ConcurrentCollectivesText(const ConcurrentCollectivesEstimate& e) {
  std::string out = absl::StrFormat(
      "%d collectives at once on network %s, congestion %s, library %s\n  %-2s %-14s %12s %6s "
      "%6s %6s %-14s %12s %12s %8s\n",
      e.collectives.size(), e.network, CongestionName(e.congestion),
      CollectiveLibraryName(e.library), "#", "collective", "bytes", "ranks", "stride", "first",
      "algorithm", "alone us", "together us", "slowdown");
  for (size_t i = 0; i < e.collectives.size(); ++i) {
    const ConcurrentCollective& c = e.collectives[i];
    const ConcurrentEstimate& r = e.results[i];
    absl::StrAppendFormat(&out, "  %-2d %-14s %12.4g %6d %6d %6d %-14s %12.3f %12.3f %7.2fx\n",
                          i + 1, CollectiveKindName(c.op.kind), c.op.bytes.value(),
                          c.op.group.size, c.op.group.stride, c.first,
                          CollectiveAlgorithmName(r.alone.algorithm),
                          ToMicroseconds(r.alone.time), ToMicroseconds(r.together.time),
                          r.alone.time.value() > 0 ? r.together.time / r.alone.time : 1.0);
  }
  return out;
}

json ConcurrentCollectivesJson(const ConcurrentCollectivesEstimate& e) {
  json collectives = json::array();
  for (size_t i = 0; i < e.collectives.size(); ++i) {
    const ConcurrentCollective& c = e.collectives[i];
    const ConcurrentEstimate& r = e.results[i];
    collectives.push_back({{"op", std::string(CollectiveKindName(c.op.kind))},
                           {"bytes", c.op.bytes.value()},
                           {"ranks", c.op.group.size},
                           {"stride", c.op.group.stride},
                           {"first", c.first},
                           {"algorithm", std::string(CollectiveAlgorithmName(r.alone.algorithm))},
                           {"alone_us", ToMicroseconds(r.alone.time)},
                           {"together_us", ToMicroseconds(r.together.time)},
                           {"together_bus_bandwidth_gbps",
                            ToGigabytesPerSecond(r.together.bus_bandwidth)}});
  }
  return {{"network", e.network},
          {"congestion", std::string(CongestionName(e.congestion))},
          {"library", std::string(CollectiveLibraryName(e.library))},
          {"collectives", std::move(collectives)}};
}

}  // namespace projector
