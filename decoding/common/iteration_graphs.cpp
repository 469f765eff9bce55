#include "decoding/common/iteration_graphs.h"

#include <algorithm>

#include "core/check.h"

namespace vispec {

DecodeState IterationGraphs::rows(const DecodeRequest& request, int64_t cells, int64_t pad, torch::Device device,
                                  int64_t path_width) {
  auto& set = sets_[{request.batch(), cells + pad, path_width, int64_t(device.type()), int64_t(device.index())}];
  if (!set) set = std::make_unique<Set>();
  return DecodeState(request, cells, pad, device, &set->rows, path_width);
}

IterationGraphs::Set& IterationGraphs::set_of(const DecodeState& rows) {
  for (auto& [shape, set] : sets_)
    if (set->rows.tokens.defined() && set->rows.tokens.data_ptr() == rows.tokens.data_ptr()) return *set;
  VISPEC_ASSERT(false, "an iteration over decode rows that IterationGraphs::rows did not make");
}

torch::Tensor IterationGraphs::state(const DecodeState& rows, const std::string& name, at::IntArrayRef sizes,
                                     const torch::TensorOptions& options) {
  auto& t = set_of(rows).own[name];
  if (!t.defined() || t.sizes() != sizes || t.dtype() != options.dtype()) t = torch::empty(sizes, options);
  return t.zero_();
}

bool IterationGraphs::replays(torch::Device device) const {
  return device.is_cuda() && cuda_graphs_enabled() && !failed_;
}

void IterationGraphs::run(DecodeState& rows, const StepKey& key, const std::vector<const torch::Tensor*>& cache_lengths,
                          const std::vector<KvCache*>& caches, const std::function<void()>& body,
                          const std::vector<std::vector<int64_t>>& after) {
  VISPEC_ASSERT(after.empty() || after.size() == caches.size(), "lengths after an iteration for ", after.size(), " of ",
                caches.size(), " caches");
  std::vector<std::vector<int64_t>> start;
  for (const auto* c : caches) start.push_back(c->lengths());
  const auto iteration = [&] {
    for (size_t i = 0; i < caches.size(); ++i) caches[i]->settle(start[i]);  // every run plans the same blocks
    body();
    if (after.empty()) rows.read_lengths_on_device(caches);
  };
  // Host code, outside the body: a replay runs none of the body's.
  if (after.empty()) rows.settle_lengths_at_read(caches);
  const bool pooled = std::all_of(cache_lengths.begin(), cache_lengths.end(), [](const auto* t) { return t; });
  if (key.empty() || !pooled || failed_) {  // eager, each forward still replayed as its own graph
    iteration();
  } else {
    replay(rows, key, cache_lengths, iteration);
  }
  for (size_t i = 0; i < after.size(); ++i) caches[i]->settle(after[i]);
}

void IterationGraphs::replay(const DecodeState& rows, const StepKey& key,
                             const std::vector<const torch::Tensor*>& cache_lengths,
                             const std::function<void()>& iteration) {
  auto& set = set_of(rows);
  const auto& b = set.rows;
  // Everything the body reads and writes that outlives it (the K/V caches aside: a rerun from the same lengths
  // writes the same slots again), and what a replay must reproduce bit for bit: the committed tokens, the
  // counts and what the host will read.
  std::vector<const at::Tensor*> state{&b.tokens, &b.n, &b.iteration, &b.sample_ids, &b.read};
  for (const auto& [name, t] : set.own) state.push_back(&t);
  for (const auto* t : cache_lengths) state.push_back(t);
  std::vector<const void*> storage;
  for (const auto* t : state) storage.push_back(t->data_ptr());
  auto& graphs = graphs_[storage];
  if (!graphs)
    graphs = std::make_unique<StepGraphs>(
        rows.tokens.device(), state, std::vector<const at::Tensor*>{&b.read, &b.tokens}, "vispec::iteration_graph");
  graphs->run(key, iteration);
  if (rows.tokens.is_cuda() && !graphs->replaying()) failed_ = true;
}

}  // namespace vispec
