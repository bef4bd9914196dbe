#include "serving/engine.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "serving/pass_events.h"

namespace projector {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

// A request inside the engine.
struct Live {
  const Request* request = nullptr;
  int64_t computed = 0;       // tokens whose K and V are in the cache
  int64_t generated = 0;      // output tokens emitted
  int64_t blocks = 0;         // cache blocks it holds alone
  int64_t shared_blocks = 0;  // its group's cached prefix blocks it reads (prefix caching)
  int64_t cached_tokens = 0;  // prompt tokens the prefix cache gave it at its last admission
  int64_t preemptions = 0;
  bool in_flight = false;
  double sent_s = 0;
  double first_token_s = -1;
  double finish_s = -1;
  // The sequence so far: the prompt and every token emitted. A pass that brings `computed` up
  // to it emits the next token.
  int64_t Length() const { return request->prompt_tokens + generated; }
  int64_t Remaining() const { return Length() - computed; }
};

struct Scheduled {
  int32_t index = 0;
  int64_t new_tokens = 0;
};

// A prefix group's cached KV blocks (prefix caching): the full blocks of its shared prefix, each
// cached as soon as the request computing it has computed it (vLLM caches a block once it is
// full, so a request admitted while another is still prefilling the prefix reuses the blocks
// done so far), kept after that request; evictable, least recently used first, when no running
// request reads them.
struct PrefixEntry {
  int64_t blocks = 0;
  int64_t refs = 0;      // running requests that read them
  int64_t last_use = 0;  // the engine's use counter when last released
  bool resident = false;
  int32_t publisher = -1;  // the request whose computed blocks extend the entry
};

struct Batch {
  double end_s = 0;
  std::vector<Scheduled> items;
};

// Adds one scheduled request to the pass: a prefill chunk while the prompt (or, after a
// preemption, the prompt and the tokens emitted so far) is not all in the cache, else a decode
// step over its cache.
void AddToPass(const Live& r, int64_t new_tokens, BatchPass& pass) {
  const bool completes = r.computed + new_tokens == r.Length();
  if (r.generated > 0 && r.Remaining() == 1) {
    ++pass.decode_sequences;
    pass.decode_kv_tokens += r.computed + 1;
  } else {
    pass.prefills.push_back(PrefillChunk{.new_tokens = new_tokens, .context = r.computed});
  }
  if (completes) ++pass.emitting;
}

// Prices a pass at the configured level of detail: one analytical cost (medium) or the pass
// replayed as events per layer and collective step (high).
struct PassTimer {
  PassCostModel& cost;
  EventPassTimer* events = nullptr;  // set for the high level
  absl::Status StageTimes(const BatchPass& pass, std::span<Seconds> out) {
    return events != nullptr ? events->StageTimes(pass, out) : cost.StageTimes(pass, out);
  }
  const Deployment& deployment() const { return cost.deployment(); }
};

class ContinuousEngine {
 public:
  ContinuousEngine(PassTimer& cost, const EngineConfig& config, std::span<const Request> requests,
                   const KvCacheSizing& kv)
      : cost_(cost),
        config_(config),
        requests_(requests),
        block_size_(kv.block_size),
        free_blocks_(kv.blocks),
        pp_(cost.deployment().pp),
        stage_free_(static_cast<size_t>(pp_), 0.0),
        stage_times_(static_cast<size_t>(pp_)) {
    run_.kv = kv;
    live_.resize(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
      Live& r = live_[i];
      r.request = &requests[i];
      if (requests[i].prefilled) {
        r.computed = requests[i].prompt_tokens;
        r.generated = 1;
      }
    }
    run_.passes.reserve(requests.size() * 2);
  }

  absl::StatusOr<ReplicaRun> Run() {
    double now = 0;
    while (true) {
      Send(now);
      if (static_cast<int64_t>(in_flight_.size()) < pp_) {
        PROJECTOR_ASSIGN_OR_RETURN(const bool launched, ScheduleAndLaunch(now));
        if (launched) continue;
      }
      const double done = NextCompletion();
      const double arrive = NextSendable();
      if (done == kNever && arrive == kNever) break;
      if (done <= arrive) {
        now = std::max(now, done);
        Complete(now);
      } else {
        now = std::max(now, arrive);
      }
    }
    return Result();
  }

  // The lock-step use of the engine (RunDpAttention): a caller that prices the pass itself.
  // Requests that have arrived by `now` enter the waiting queue while a concurrency slot is
  // free; one held back until a slot frees is sent then.
  void Send(double now) {
    while (next_ < requests_.size() && requests_[next_].arrival_s <= now && SlotFree()) {
      SendNext(now);
    }
  }
  // Sends the next request (arrived by `now`) whatever the limit: a caller that holds it.
  void SendNext(double now) {
    Live& r = live_[next_];
    r.sent_s = std::max(requests_[next_].arrival_s, now);
    if (r.request->prefilled) r.first_token_s = r.sent_s;
    waiting_.push_back(static_cast<int32_t>(next_));
    ++in_system_;
    ++next_;
  }
  int64_t finished() const { return finished_; }
  double NextSendable() const {
    if (next_ >= requests_.size() || !SlotFree()) return kNever;
    return requests_[next_].arrival_s;
  }
  double NextCompletion() const {
    double t = kNever;
    for (const Batch& b : in_flight_) t = std::min(t, b.end_s);
    return t;
  }
  bool Busy() const { return !in_flight_.empty(); }
  // Schedules the next pass (vLLM's scheduler, see Schedule) without launching it: false when
  // there is nothing to run. The pass is pass(), its requests scheduled_requests().
  bool ScheduleNext() { return Schedule(); }
  const BatchPass& pass() const { return pass_; }
  size_t scheduled_requests() const { return items_.size(); }
  // Launches the scheduled pass to end at `end_s` (priced by the caller).
  void LaunchUntil(double end_s) {
    in_flight_.push_back(Batch{.end_s = end_s, .items = items_});
    tokens_by_batch_.push_back(pass_.NewTokens());
  }
  void CompleteNext(double now) { Complete(now); }

  absl::StatusOr<ReplicaRun> Result() {
    if (finished_ != static_cast<int64_t>(live_.size())) {
      return absl::InternalError(absl::StrCat("the engine stopped with ",
                                              live_.size() - static_cast<size_t>(finished_),
                                              " requests unfinished"));
    }
    run_.requests.reserve(live_.size());
    for (const Live& r : live_) {
      run_.requests.push_back(RequestRecord{.id = r.request->id,
                                            .arrival_s = r.sent_s,
                                            .first_token_s = r.first_token_s,
                                            .finish_s = r.finish_s,
                                            .prompt_tokens = r.request->prompt_tokens,
                                            .output_tokens = r.request->output_tokens,
                                            .preemptions = r.preemptions,
                                            .cached_tokens = r.cached_tokens});
    }
    return std::move(run_);
  }

 private:
  bool SlotFree() const { return config_.concurrency == 0 || in_system_ < config_.concurrency; }

  // Blocks a request needs beyond those it holds or reads to have `tokens` in the cache.
  int64_t BlocksNeeded(const Live& r, int64_t tokens) const {
    return BlocksFor(tokens, block_size_) - r.blocks - r.shared_blocks;
  }

  bool TryAllocate(Live& r, int64_t new_tokens) {
    const int64_t need = BlocksNeeded(r, r.computed + new_tokens);
    if (need > free_blocks_ && !EvictPrefixes(need)) return false;
    free_blocks_ -= need;
    r.blocks += need;
    return true;
  }

  // Drops cached prefixes no running request reads, least recently used first, until `need`
  // blocks are free; false when they do not free enough.
  bool EvictPrefixes(int64_t need) {
    while (need > free_blocks_) {
      PrefixEntry* oldest = nullptr;
      for (auto& [group, entry] : prefixes_) {
        if (entry.resident && entry.refs == 0 &&
            (oldest == nullptr || entry.last_use < oldest->last_use)) {
          oldest = &entry;
        }
      }
      if (oldest == nullptr) return false;
      free_blocks_ += oldest->blocks;
      oldest->blocks = 0;
      oldest->resident = false;
      ++run_.prefix_cache.evictions;
    }
    return true;
  }

  // At admission (nothing of the request in the cache yet): the cached full blocks of its
  // prefix, leaving at least one token to compute (the pass that emits its next token).
  void LookUpPrefix(Live& r) {
    if (!config_.prefix_caching || r.computed != 0 || r.request->prefix_group < 0) return;
    const auto it = prefixes_.find(r.request->prefix_group);
    if (it == prefixes_.end() || !it->second.resident) return;
    r.shared_blocks = std::min(it->second.blocks, (r.Length() - 1) / block_size_);
    if (r.shared_blocks == 0) return;
    ++it->second.refs;
    r.computed = r.shared_blocks * block_size_;
  }

  // The request stops reading its group's cached prefix (finished, preempted, or not admitted
  // after all); the blocks stay cached.
  void ReleasePrefix(Live& r) {
    if (r.shared_blocks == 0) return;
    PrefixEntry& entry = prefixes_[r.request->prefix_group];
    --entry.refs;
    entry.last_use = ++uses_;
    r.shared_blocks = 0;
  }

  // A request's computed full blocks of its prefix become its group's cached prefix as it
  // computes them (the request reads them from then on): it starts the group's entry when the
  // group has none cached, and extends the entry it started.
  void PublishPrefix(Live& r, int32_t index) {
    if (!config_.prefix_caching || r.request->prefix_group < 0 || r.request->prefilled) return;
    const int64_t full = r.request->prefix_tokens / block_size_;
    const int64_t done = std::min(full, r.computed / block_size_);
    if (done == 0) return;
    PrefixEntry& entry = prefixes_[r.request->prefix_group];
    if (!entry.resident) {
      if (r.shared_blocks > 0) return;
      entry = PrefixEntry{
          .blocks = 0, .refs = 1, .last_use = ++uses_, .resident = true, .publisher = index};
    } else if (entry.publisher != index || done <= entry.blocks) {
      return;
    }
    const int64_t more = done - entry.blocks;
    entry.blocks = done;
    r.blocks -= more;
    r.shared_blocks += more;
  }

  // vLLM's recompute preemption: the request's blocks are freed and it returns to the front of
  // the waiting queue, to prefill its prompt and emitted tokens again.
  void Preempt(size_t running_position) {
    const int32_t index = running_[running_position];
    Live& r = live_[static_cast<size_t>(index)];
    free_blocks_ += r.blocks;
    r.blocks = 0;
    ReleasePrefix(r);
    r.computed = 0;
    ++r.preemptions;
    ++run_.preemptions;
    running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(running_position));
    waiting_.push_front(index);
  }

  // Frees blocks for running_[position] by preempting the latest admitted requests after it
  // that are not in flight, until `need` blocks are free or none is left.
  bool MakeRoom(size_t position, int64_t need, bool& preempted) {
    EvictPrefixes(need);
    while (need > free_blocks_) {
      size_t victim = running_.size();
      for (size_t j = running_.size(); j-- > position + 1;) {
        if (!live_[static_cast<size_t>(running_[j])].in_flight) {
          victim = j;
          break;
        }
      }
      if (victim == running_.size()) return false;
      Preempt(victim);
      preempted = true;
    }
    return true;
  }

  // Which running requests a scheduling sweep takes.
  enum class Phase { kAny, kPrefill, kDecode };
  static bool InPhase(const Live& r, Phase phase) {
    const bool prefill = r.generated == 0 || r.Remaining() > 1;
    return phase == Phase::kAny || (phase == Phase::kPrefill) == prefill;
  }

  // Running requests in admission order, each its next chunk or decode token, preempting the
  // latest admitted ones when the cache is out of blocks.
  void ScheduleRunning(Phase phase, int64_t& budget, bool& preempted) {
    for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
      if (static_cast<int64_t>(items_.size()) == config_.max_num_seqs) break;
      Live& r = live_[static_cast<size_t>(running_[i])];
      if (r.in_flight || !InPhase(r, phase)) continue;
      const int64_t remaining = r.Remaining();
      const int64_t take = std::min(remaining, budget);
      if (!config_.chunked_prefill && take < remaining) continue;
      const int64_t need = BlocksNeeded(r, r.computed + take);
      if (!MakeRoom(i, need, preempted)) continue;
      TryAllocate(r, take);
      Add(running_[i], take);
      budget -= take;
    }
  }

  // Waiting requests first come, first served, while the budget, the sequence limit and the
  // free blocks allow. Each of the pp batches in flight (vLLM's virtual engines, one scheduler
  // each) holds up to max_num_seqs requests.
  void ScheduleWaiting(int64_t& budget) {
    const int64_t per_pass = config_.max_num_seqs;
    while (!waiting_.empty() && budget > 0 && static_cast<int64_t>(items_.size()) < per_pass &&
           static_cast<int64_t>(running_.size()) < per_pass * pp_) {
      const int32_t index = waiting_.front();
      Live& r = live_[static_cast<size_t>(index)];
      const bool fresh = r.computed == 0;
      LookUpPrefix(r);
      const int64_t remaining = r.Remaining();
      const int64_t take = std::min(remaining, budget);
      if ((!config_.chunked_prefill && take < remaining) || !TryAllocate(r, take)) {
        if (fresh) {
          ReleasePrefix(r);
          r.computed = 0;
        }
        break;
      }
      if (fresh && config_.prefix_caching) {
        r.cached_tokens = r.computed;
        run_.prefix_cache.query_tokens += r.Length();
        run_.prefix_cache.hit_tokens += r.computed;
      }
      waiting_.pop_front();
      running_.push_back(index);
      Add(index, take);
      budget -= take;
    }
  }

  // Mixed passes (vLLM V1, chunked prefill): running requests first, then new ones. Separate
  // passes (vLLM V0 without chunked prefill, SGLang without --enable-mixed-chunk): a pass of
  // prefills whenever there is prefill work, decode-only passes otherwise, so a new request
  // stalls every running decode for its prefill.
  bool Schedule() {
    pass_.Clear();
    items_.clear();
    int64_t budget = config_.max_batched_tokens;
    bool preempted = false;
    if (config_.mixed_batches) {
      ScheduleRunning(Phase::kAny, budget, preempted);
      if (!preempted) ScheduleWaiting(budget);
    } else {
      ScheduleRunning(Phase::kPrefill, budget, preempted);
      if (!preempted) ScheduleWaiting(budget);
      if (items_.empty()) ScheduleRunning(Phase::kDecode, budget, preempted);
    }
    return !items_.empty();
  }

  absl::StatusOr<bool> ScheduleAndLaunch(double now) {
    if (!Schedule()) return false;
    PROJECTOR_RETURN_IF_ERROR(Launch(now));
    return true;
  }

  void Add(int32_t index, int64_t take) {
    Live& r = live_[static_cast<size_t>(index)];
    AddToPass(r, take, pass_);
    r.in_flight = true;
    items_.push_back(Scheduled{.index = index, .new_tokens = take});
  }

  // The pass enters the pipeline after the host's overhead, each stage as soon as the previous
  // stage hands it over and the stage is free.
  absl::Status Launch(double now) {
    PROJECTOR_RETURN_IF_ERROR(cost_.StageTimes(pass_, stage_times_));
    const double overhead = config_.pass_overhead.value() +
                            config_.request_overhead.value() * static_cast<double>(items_.size());
    double t = now + overhead;
    for (size_t s = 0; s < stage_times_.size(); ++s) {
      t = std::max(t, stage_free_[s]) + stage_times_[s].value();
      stage_free_[s] = t;
    }
    LaunchUntil(t);
    return absl::OkStatus();
  }

  void Complete(double now) {
    size_t first = 0;
    for (size_t b = 1; b < in_flight_.size(); ++b) {
      if (in_flight_[b].end_s < in_flight_[first].end_s) first = b;
    }
    const Batch batch = std::move(in_flight_[first]);
    const int64_t tokens = tokens_by_batch_[first];
    in_flight_.erase(in_flight_.begin() + static_cast<std::ptrdiff_t>(first));
    tokens_by_batch_.erase(tokens_by_batch_.begin() + static_cast<std::ptrdiff_t>(first));
    for (const Scheduled& item : batch.items) {
      Live& r = live_[static_cast<size_t>(item.index)];
      r.in_flight = false;
      r.computed += item.new_tokens;
      PublishPrefix(r, item.index);
      if (r.computed < r.Length()) continue;
      ++r.generated;
      if (r.first_token_s < 0) r.first_token_s = now;
      if (r.generated >= r.request->output_tokens) Finish(item.index, now);
    }
    run_.passes.push_back(PassSample{.time_s = now,
                                     .running = static_cast<int32_t>(running_.size()),
                                     .waiting = static_cast<int32_t>(waiting_.size()),
                                     .batch_sequences = static_cast<int32_t>(batch.items.size()),
                                     .batch_tokens = static_cast<int32_t>(tokens),
                                     .kv_blocks_used = run_.kv.blocks - free_blocks_,
                                     .preemptions = run_.preemptions});
  }

  void Finish(int32_t index, double now) {
    Live& r = live_[static_cast<size_t>(index)];
    r.finish_s = now;
    free_blocks_ += r.blocks;
    r.blocks = 0;
    ReleasePrefix(r);
    running_.erase(std::find(running_.begin(), running_.end(), index));
    --in_system_;
    ++finished_;
  }

  ReplicaRun run_;
  PassTimer& cost_;
  const EngineConfig& config_;
  std::span<const Request> requests_;
  const int64_t block_size_;
  int64_t free_blocks_;
  const int64_t pp_;
  std::vector<Live> live_;
  size_t next_ = 0;
  int64_t in_system_ = 0;
  int64_t finished_ = 0;
  std::deque<int32_t> waiting_;
  std::vector<int32_t> running_;
  std::vector<Batch> in_flight_;
  std::vector<int64_t> tokens_by_batch_;
  std::vector<double> stage_free_;
  std::vector<Seconds> stage_times_;
  BatchPass pass_;
  std::vector<Scheduled> items_;
  absl::flat_hash_map<int64_t, PrefixEntry> prefixes_;  // by prefix group
  int64_t uses_ = 0;  // the prefix entries' use counter (LRU order)
};

// Static batching: batches of max_num_seqs requests in arrival order; a batch starts when its
// last request has arrived and the previous batch is done, prefills every prompt in one pass
// and then decodes every request of the batch until the longest output is complete (the
// finished ones keep their slots, as in a static batch). Pipeline stages run one batch at a
// time.
absl::StatusOr<ReplicaRun> RunStatic(PassTimer& cost, const EngineConfig& config,
                                     std::span<const Request> requests, ReplicaRun run) {
  const int64_t pp = cost.deployment().pp;
  std::vector<Seconds> stage_times(static_cast<size_t>(pp));
  BatchPass pass;
  double now = 0;
  const size_t batch_size = static_cast<size_t>(config.max_num_seqs);
  run.requests.reserve(requests.size());
  auto run_pass = [&](double start, int64_t sequences) -> absl::StatusOr<double> {
    PROJECTOR_RETURN_IF_ERROR(cost.StageTimes(pass, stage_times));
    double t = start + config.pass_overhead.value() +
               config.request_overhead.value() * static_cast<double>(sequences);
    for (const Seconds s : stage_times) t += s.value();
    return t;
  };
  for (size_t first = 0; first < requests.size(); first += batch_size) {
    const std::span<const Request> batch =
        requests.subspan(first, std::min(batch_size, requests.size() - first));
    int64_t blocks = 0;
    int64_t longest = 0;
    for (const Request& r : batch) {
      blocks += BlocksFor(r.prompt_tokens + r.output_tokens, run.kv.block_size);
      longest = std::max(longest, r.output_tokens);
    }
    if (blocks > run.kv.blocks) {
      return absl::FailedPreconditionError(absl::StrCat(
          "max-num-seqs: a static batch of ", batch.size(), " requests needs ", blocks,
          " KV blocks for its prompts and outputs, more than the ", run.kv.blocks,
          " the deployment holds (", run.kv.Tokens(), " tokens); use a smaller batch"));
    }
    now = std::max(now, batch.back().arrival_s);
    const size_t base = run.requests.size();
    for (const Request& r : batch) {
      run.requests.push_back(RequestRecord{.id = r.id,
                                           .arrival_s = r.arrival_s,
                                           .first_token_s = 0,
                                           .finish_s = 0,
                                           .prompt_tokens = r.prompt_tokens,
                                           .output_tokens = r.output_tokens,
                                           .preemptions = 0});
    }
    const int64_t sequences = static_cast<int64_t>(batch.size());
    pass.Clear();
    for (const Request& r : batch)
      pass.prefills.push_back({.new_tokens = r.prompt_tokens, .context = 0});
    pass.emitting = sequences;
    PROJECTOR_ASSIGN_OR_RETURN(now, run_pass(now, sequences));
    auto record = [&](int64_t step) {
      for (size_t i = 0; i < batch.size(); ++i) {
        RequestRecord& rec = run.requests[base + i];
        if (step == 1) rec.first_token_s = now;
        if (step == batch[i].output_tokens) rec.finish_s = now;
      }
      run.passes.push_back(PassSample{.time_s = now,
                                      .running = static_cast<int32_t>(sequences),
                                      .waiting = 0,
                                      .batch_sequences = static_cast<int32_t>(sequences),
                                      .batch_tokens = static_cast<int32_t>(pass.NewTokens()),
                                      .kv_blocks_used = blocks,
                                      .preemptions = 0});
    };
    record(1);
    for (int64_t step = 2; step <= longest; ++step) {
      pass.Clear();
      pass.decode_sequences = sequences;
      for (const Request& r : batch) pass.decode_kv_tokens += r.prompt_tokens + step - 1;
      pass.emitting = sequences;
      PROJECTOR_ASSIGN_OR_RETURN(now, run_pass(now, sequences));
      record(step);
    }
  }
  return run;
}

// Every request must fit the whole cache at its full length, and without chunked prefill its
// prompt must fit one pass.
absl::Status CheckServable(const EngineConfig& config, std::span<const Request> requests,
                           const KvCacheSizing& kv) {
  for (const Request& r : requests) {
    const int64_t length = r.prompt_tokens + r.output_tokens;
    if (BlocksFor(length, kv.block_size) > kv.blocks) {
      return absl::FailedPreconditionError(
          absl::StrCat("request ", r.id, " needs ", length, " tokens of KV cache (prompt ",
                       r.prompt_tokens, " + output ", r.output_tokens, "), more than the ",
                       kv.Tokens(), " the deployment holds; shorten it or add GPUs (--tp, --pp)"));
    }
    if (config.batching == BatchingMode::kContinuous && !config.chunked_prefill &&
        r.prompt_tokens + r.output_tokens > config.max_batched_tokens) {
      return absl::FailedPreconditionError(
          absl::StrCat("request ", r.id, ": prompt and output of ", length,
                       " tokens exceed --max-batched-tokens ", config.max_batched_tokens,
                       " without chunked prefill (a preempted request prefills both again)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view LevelOfDetailName(LevelOfDetail lod) {
  return lod == LevelOfDetail::kMedium ? "medium" : "high";
}

absl::StatusOr<LevelOfDetail> ParseLevelOfDetail(std::string_view name) {
  if (name == "medium") return LevelOfDetail::kMedium;
  if (name == "high") return LevelOfDetail::kHigh;
  return absl::InvalidArgumentError(absl::StrCat("unknown level of detail '",
                                                 absl::string_view(name.data(), name.size()),
                                                 "'; accepted: medium, high"));
}

std::string_view BatchingModeName(BatchingMode mode) {
  return mode == BatchingMode::kContinuous ? "continuous" : "static";
}

absl::StatusOr<BatchingMode> ParseBatchingMode(std::string_view name) {
  if (name == "continuous") return BatchingMode::kContinuous;
  if (name == "static") return BatchingMode::kStatic;
  return absl::InvalidArgumentError(absl::StrCat("unknown batching '",
                                                 absl::string_view(name.data(), name.size()),
                                                 "'; accepted: continuous, static"));
}

absl::Status ValidateEngineConfig(const EngineConfig& config) {
  if (config.max_num_seqs < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max-num-seqs: must be >= 1, got ", config.max_num_seqs));
  }
  if (config.max_batched_tokens < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max-batched-tokens: must be >= 1, got ", config.max_batched_tokens));
  }
  if (config.concurrency < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("concurrency: must be >= 1 (or 0 for no limit), got ", config.concurrency));
  }
  if (config.slow_gpu.gpu >= 0 &&
      (config.lod != LevelOfDetail::kHigh || !(config.slow_gpu.factor >= 1.0) ||
       !std::isfinite(config.slow_gpu.factor))) {
    return absl::InvalidArgumentError("slow-gpu: a straggler needs --lod high and a factor >= 1");
  }
  if (config.pass_overhead.value() < 0 || config.request_overhead.value() < 0) {
    return absl::InvalidArgumentError("pass-overhead-us and request-overhead-us must be >= 0");
  }
  if (config.prefix_caching && config.batching == BatchingMode::kStatic) {
    return absl::InvalidArgumentError(
        "prefix-caching: needs continuous batching (a static batch preallocates every "
        "request's cache and prefills its prompts together)");
  }
  return absl::OkStatus();
}

absl::StatusOr<ReplicaRun> RunReplica(PassCostModel& cost, const EngineConfig& config,
                                      std::span<const Request> requests) {
  PROJECTOR_RETURN_IF_ERROR(ValidateEngineConfig(config));
  if (config.slow_gpu.gpu >= cost.deployment().NumGpus()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "slow-gpu: GPU ", config.slow_gpu.gpu, " is not in a replica of ",
        cost.deployment().NumGpus(), " GPUs (0 to ", cost.deployment().NumGpus() - 1, ")"));
  }
  PROJECTOR_ASSIGN_OR_RETURN(
      const KvCacheSizing kv,
      SizeKvCache(cost.deployment(), config.kv, config.max_batched_tokens, config.max_num_seqs));
  PROJECTOR_RETURN_IF_ERROR(CheckServable(config, requests, kv));
  ReplicaRun run;
  run.kv = kv;
  EventPassTimer events(cost, config.slow_gpu);
  PassTimer timer{.cost = cost, .events = config.lod == LevelOfDetail::kHigh ? &events : nullptr};
  absl::StatusOr<ReplicaRun> result;
  if (config.batching == BatchingMode::kStatic) {
    result = RunStatic(timer, config, requests, std::move(run));
  } else {
    ContinuousEngine engine(timer, config, requests, kv);
    result = engine.Run();
  }
  if (result.ok()) result->events = events.events();
  return result;
}

absl::StatusOr<std::vector<ReplicaRun>> RunDpAttention(DpAttentionCost& cost,
                                                       const EngineConfig& config,
                                                       std::span<const Request> requests) {
  PROJECTOR_RETURN_IF_ERROR(ValidateEngineConfig(config));
  if (config.batching != BatchingMode::kContinuous) {
    return absl::InvalidArgumentError(
        "batching: DP attention runs continuous batching (SGLang's scheduler), not static");
  }
  if (config.slow_gpu.gpu >= cost.deployment().NumGpus()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "slow-gpu: GPU ", config.slow_gpu.gpu, " is not in a group of ",
        cost.deployment().NumGpus(), " GPUs (0 to ", cost.deployment().NumGpus() - 1, ")"));
  }
  PassCostModel& rank = cost.rank();
  EventDpPassTimer events(cost, config.slow_gpu);
  const bool high = config.lod == LevelOfDetail::kHigh;
  PROJECTOR_ASSIGN_OR_RETURN(
      const KvCacheSizing kv,
      SizeKvCache(rank.deployment(), config.kv, config.max_batched_tokens, config.max_num_seqs));
  PROJECTOR_RETURN_IF_ERROR(CheckServable(config, requests, kv));
  const size_t ranks = static_cast<size_t>(cost.ranks());
  std::vector<std::vector<Request>> shares(ranks);
  std::vector<size_t> rank_of(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const int64_t bound = requests[i].dp_rank;
    rank_of[i] = bound >= 0 ? static_cast<size_t>(bound) % ranks : i % ranks;
    shares[rank_of[i]].push_back(requests[i]);
  }
  PassTimer timer{.cost = rank};
  // The client sends requests in arrival order while fewer than config.concurrency are
  // unfinished over all ranks; the ranks' own engines send whatever they are given.
  EngineConfig rank_config = config;
  rank_config.concurrency = 0;
  std::vector<std::unique_ptr<ContinuousEngine>> engines;
  engines.reserve(ranks);
  for (const std::vector<Request>& share : shares) {
    engines.push_back(std::make_unique<ContinuousEngine>(timer, rank_config, share, kv));
  }
  size_t sent = 0;
  auto slot_free = [&] {
    int64_t finished = 0;
    for (const auto& engine : engines) finished += engine->finished();
    return config.concurrency == 0 ||
           static_cast<int64_t>(sent) - finished < config.concurrency;
  };
  std::vector<BatchPass> passes(ranks);
  double now = 0;
  while (true) {
    while (sent < requests.size() && requests[sent].arrival_s <= now && slot_free()) {
      engines[rank_of[sent]]->SendNext(now);
      ++sent;
    }
    bool busy = false;
    for (const auto& engine : engines) busy = busy || engine->Busy();
    if (!busy) {
      bool scheduled = false;
      size_t most_requests = 0;
      for (size_t r = 0; r < ranks; ++r) {
        if (engines[r]->ScheduleNext()) {
          scheduled = true;
          passes[r] = engines[r]->pass();
          most_requests = std::max(most_requests, engines[r]->scheduled_requests());
        } else {
          passes[r].Clear();
        }
      }
      if (scheduled) {
        PROJECTOR_ASSIGN_OR_RETURN(const Seconds pass_time,
                                   high ? events.PassTime(passes) : cost.PassTime(passes));
        const double end = now + config.pass_overhead.value() +
                           config.request_overhead.value() * static_cast<double>(most_requests) +
                           pass_time.value();
        for (size_t r = 0; r < ranks; ++r) {
          if (passes[r].NewTokens() > 0) engines[r]->LaunchUntil(end);
        }
        continue;
      }
    }
    double done = kNever;
    for (const auto& engine : engines) done = std::min(done, engine->NextCompletion());
    const double arrive =
        sent < requests.size() && slot_free() ? requests[sent].arrival_s : kNever;
    if (done == kNever && arrive == kNever) break;
    if (done <= arrive) {
      now = std::max(now, done);
      for (auto& engine : engines) {
        if (engine->NextCompletion() == done) engine->CompleteNext(now);
      }
    } else {
      now = std::max(now, arrive);
    }
  }
  std::vector<ReplicaRun> runs;
  runs.reserve(ranks);
  for (auto& engine : engines) {
    PROJECTOR_ASSIGN_OR_RETURN(ReplicaRun run, engine->Result());
    runs.push_back(std::move(run));
  }
  runs.front().events = events.events();  // the group's, counted once
  return runs;
}

}  // namespace projector
