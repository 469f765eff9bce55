#include "decoding/common/forward_graphs.h"

#include "core/check.h"

namespace vispec {

namespace {
// Pooled caches per model: a decoder holds at most a few caches of one model at once; more means copies leak.
constexpr size_t kMaxPooledCaches = 8;
}  // namespace

KvCache ForwardGraphs::make_cache(int64_t rows, int64_t capacity, const std::function<KvCache()>& make) {
  for (auto& p : pool_) {
    // use_count 1: only the pool holds the lengths, so no copy of this cache is in use.
    if (p->cache.batch() == rows && p->cache.capacity() == capacity && p->cache.lengths_on_device().use_count() == 1) {
      KvCache copy = p->cache;
      copy.reset();
      return copy;
    }
  }
  VISPEC_ASSERT(pool_.size() < kMaxPooledCaches, "more than ", kMaxPooledCaches, " static caches of one model in use");
  auto p = std::make_unique<Pooled>(Pooled{make(), {}});
  VISPEC_ASSERT(p->cache.device_lengths() && p->cache.batch() == rows && p->cache.capacity() == capacity,
                "a pooled cache that is not static or of another shape");
  pool_.push_back(std::move(p));
  KvCache copy = pool_.back()->cache;
  copy.reset();
  return copy;
}

KvCache ForwardGraphs::make_cache(const Gpt& gpt, int64_t rows, int64_t extra) {
  const auto& c = gpt->config();
  VISPEC_ASSERT(!c.row_ends(), "a static cache for a model whose rows end in an end-of-line token");
  return make_cache(rows, c.max_seq_len() + extra,
                    [&] { return gpt->make_cache(rows, extra, /*static_lengths=*/true); });
}

ForwardGraphs::Pooled* ForwardGraphs::pooled_of(const KvCache& cache) const {
  if (!cache.device_lengths()) return nullptr;
  for (const auto& p : pool_)
    if (p->cache.lengths_on_device().data_ptr() == cache.lengths_on_device().data_ptr()) return p.get();
  return nullptr;
}

bool ForwardGraphs::owns(const KvCache& cache) const { return pooled_of(cache) != nullptr; }

const torch::Tensor* ForwardGraphs::pooled_lengths(const KvCache& cache) const {
  const auto* p = pooled_of(cache);
  return p ? &p->cache.lengths_on_device() : nullptr;
}

std::vector<torch::Tensor> ForwardGraphs::forward(KvCache& cache, int64_t T, int64_t width,
                                                  const std::vector<torch::Tensor>& inputs, const Run& run,
                                                  const std::vector<bool>& per_sample) {
  auto* pooled = pooled_of(cache);
  VISPEC_ASSERT(pooled, "a static forward on a cache that is not pooled");
  auto& p = *pooled;
  // Planned once here; every run of the step (eager, warm-up, capture) then opens this block.
  const int64_t keys = cache.plan_static_block(T, width);
  // The block key: T, then each input's rank and sizes (-1 for an undefined input).
  std::vector<int64_t> shape{T};
  for (const auto& x : inputs) {
    shape.push_back(x.defined() ? x.dim() : -1);
    if (x.defined()) shape.insert(shape.end(), x.sizes().begin(), x.sizes().end());
  }
  const int64_t rows = cache.batch();
  const auto repeated = [&](size_t i) {
    const bool repeat = i < per_sample.size() && per_sample[i] && inputs[i].defined();
    VISPEC_ASSERT(!repeat || (inputs[i].dim() >= 1 && inputs[i].size(0) > 0 && rows % inputs[i].size(0) == 0),
                  "a static forward's per-sample input of ", inputs[i].sizes(), " for ", rows, " rows");
    return repeat;
  };
  auto& block = p.blocks[shape];
  if (!block) {
    // The first forward of this key sizes the buffers: a run of it gives the outputs' shapes and dtypes.
    block = std::make_unique<Block>();
    const auto device = p.cache.lengths_on_device().device();
    for (size_t i = 0; i < inputs.size(); ++i) {
      const auto& x = inputs[i];
      auto sizes = x.defined() ? x.sizes().vec() : std::vector<int64_t>{};
      if (repeated(i)) sizes[0] = rows;
      block->inputs.push_back(x.defined() ? torch::empty(sizes, x.options().device(device)) : torch::Tensor());
    }
  }
  auto& b = *block;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) continue;
    if (repeated(i)) {
      const int64_t samples = inputs[i].size(0);
      b.inputs[i].unflatten(0, {rows / samples, samples}).copy_(inputs[i].unsqueeze(0));  // every stream's rows
    } else {
      b.inputs[i].copy_(inputs[i]);
    }
  }
  if (!b.graphs) {
    auto out = run(b.inputs);  // eager, on the copied inputs
    std::vector<const at::Tensor*> state{&p.cache.lengths_on_device()}, compared;
    for (const auto& x : b.inputs) state.push_back(&x);
    for (const auto& y : out) b.outputs.push_back(y.clone());
    for (const auto& y : b.outputs) {
      state.push_back(&y);
      compared.push_back(&y);
    }
    b.graphs = std::make_unique<StepGraphs>(p.cache.lengths_on_device().device(), state, compared);
    return out;
  }
  b.graphs->run({cache.batch(), T, keys}, [&] {
    const auto out = run(b.inputs);
    VISPEC_ASSERT(out.size() == b.outputs.size(), "a static forward changed its outputs");
    for (size_t i = 0; i < out.size(); ++i) b.outputs[i].copy_(out[i]);
  });
  return b.outputs;  // the buffers themselves: a copy each would be a kernel per output per forward
}

GptOutput ForwardGraphs::forward(KvCache& cache, const torch::Tensor& tokens, const torch::Tensor& positions,
                                 const torch::Tensor& block_mask, const torch::Tensor& committed, const Forward& run) {
  const int64_t T = tokens.size(1);
  const auto out = forward(cache, T, block_width(T, block_mask), {tokens, positions, block_mask, committed},
                           [&](const std::vector<torch::Tensor>& in) {
                             const auto o = run(in[0], in[1], in[2], in[3]);
                             return std::vector<torch::Tensor>{o.logits, o.hidden};
                           });
  return {out[0], out[1]};
}

}  // namespace vispec
