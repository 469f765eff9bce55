#include "decoding/common/iteration_loop.h"

#include <utility>

#include "core/check.h"

namespace vispec {

IterationLoop::IterationLoop(IterationGraphs& graphs, DecodeState& rows, const DecodeRequest& request,
                             std::vector<KvCache*> caches, std::vector<const torch::Tensor*> pooled, Commit commit,
                             int64_t limit)
    : graphs_(graphs), rows_(rows), caches_(std::move(caches)), pooled_(std::move(pooled)), commit_(commit),
      limit_(limit), key_prefix_{rows.batch(), int64_t(request.seed)}, replays_(graphs.replays(rows.tokens.device())),
      clock_(rows.tokens.device()) {
  VISPEC_ASSERT(caches_.size() == pooled_.size(), "IterationLoop: ", caches_.size(), " caches and ", pooled_.size(),
                " pooled lengths");
}

void IterationLoop::run(const std::function<void(const RowFill&)>& start,
                        const std::function<int64_t(const std::vector<int64_t>& active)>& iteration) {
  const auto refill = [&](const RowFill& fill) {
    start(fill);
    clock_.charge(clock_.lap(), rows_.samples_of(fill.rows), &SampleStats::bookkeeping_ms);
  };
  VISPEC_ASSERT(!start || limit_ < 0, "IterationLoop: rows that refill decode the whole image");
  while (start ? rows_.next_iteration(refill) : rows_.next_iteration(limit_)) {
    const auto active = rows_.active(limit_);
    times_ = IterationTimes::start(clock_, replays_);
    const int64_t draft_forwards = iteration(active);
    times_.bookkeeping = clock_.lap();
    charge_iteration(clock_, rows_, active, times_, draft_forwards);
  }
}

std::vector<std::vector<int64_t>> IterationLoop::device_half(const StepKey& key, const std::function<void()>& body) {
  StepKey full;
  if (!key.empty()) {
    full = key_prefix_;
    full.insert(full.end(), key.begin(), key.end());
  }
  graphs_.run(rows_, full, pooled_, caches_, body);
  // The iteration's one read, which settles the rows and the caches' lengths.
  std::vector<std::vector<int64_t>> paths;
  if (commit_ == Commit::kTree) paths = rows_.settle_tree();
  else rows_.settle_chain(limit_ < 0 ? rows_.cells() : limit_);
  times_.end_device_half(clock_);
  return paths;
}

DecodeResult IterationLoop::result() {
  auto result = rows_.result();  // its read waits for the device, so settling the clock then does not
  clock_.settle(result.stats);
  return result;
}

}  // namespace vispec
