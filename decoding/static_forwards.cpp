#include "decoding/static_forwards.h"

#include "core/check.h"

namespace vispec {

namespace {
// Pooled caches per model: a decoder holds at most a few caches of one model at once; more means copies leak.
constexpr size_t kMaxPooledCaches = 8;
}  // namespace

KvCache StaticForwards::make_cache(const Gpt& gpt, int64_t rows, int64_t extra) {
  const auto& c = gpt->config();
  VISPEC_ASSERT(!c.row_ends(), "a static cache for a model whose rows end in an end-of-line token");
  const int64_t capacity = c.max_seq_len() + extra;
  for (auto& p : pool_) {
    // use_count 1: only the pool holds the lengths, so no copy of this cache is in use.
    if (p->cache.batch() == rows && p->cache.capacity() == capacity && p->cache.lengths_on_device().use_count() == 1) {
      KvCache copy = p->cache;
      copy.reset();
      return copy;
    }
  }
  VISPEC_ASSERT(pool_.size() < kMaxPooledCaches, "more than ", kMaxPooledCaches, " static caches of one model in use");
  auto p = std::make_unique<Pooled>(Pooled{gpt->make_cache(rows, extra), {}});
  // A caption's or prompt's hidden prefix is written in place at every prefill: its buffers are made here, so
  // that every copy of the cache shares them (a class model hides nothing).
  p->cache.use_device_lengths(c.text_conditional() || c.prompted() ? c.cls_token_num : 0);
  pool_.push_back(std::move(p));
  KvCache copy = pool_.back()->cache;
  copy.reset();
  return copy;
}

StaticForwards::Pooled* StaticForwards::pooled_of(const KvCache& cache) const {
  if (!cache.device_lengths()) return nullptr;
  for (const auto& p : pool_)
    if (p->cache.lengths_on_device().data_ptr() == cache.lengths_on_device().data_ptr()) return p.get();
  return nullptr;
}

bool StaticForwards::owns(const KvCache& cache) const { return pooled_of(cache) != nullptr; }

GptOutput StaticForwards::forward(KvCache& cache, const torch::Tensor& tokens, const torch::Tensor& positions,
                                  const torch::Tensor& block_mask, const Forward& run) {
  auto* pooled = pooled_of(cache);
  VISPEC_ASSERT(pooled, "a static forward on a cache that is not pooled");
  auto& p = *pooled;
  const int64_t B = tokens.size(0), T = tokens.size(1);
  const int64_t keys = cache.plan_static_block(T);
  std::vector<int64_t> shape{T};
  if (block_mask.defined()) shape.insert(shape.end(), block_mask.sizes().begin(), block_mask.sizes().end());
  auto& block = p.blocks[shape];
  if (!block) {
    // The first forward of this shape sizes the buffers: a run of it gives the outputs' shapes and dtypes.
    block = std::make_unique<Block>();
    const auto device = p.cache.lengths_on_device().device();
    const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(device);
    block->tokens = torch::zeros({B, T}, i64);
    block->positions = torch::zeros({B, T}, i64);
    if (block_mask.defined()) block->mask = torch::zeros(block_mask.sizes(), i64.dtype(torch::kBool));
  }
  block->tokens.copy_(tokens);
  block->positions.copy_(positions);
  if (block_mask.defined()) block->mask.copy_(block_mask);
  if (!block->graphs) {
    const auto out = run(block->tokens, block->positions, block->mask);  // eager, on the copied inputs
    block->logits = out.logits.clone();
    block->hidden = out.hidden.clone();
    block->graphs = std::make_unique<StepGraphs>(
        p.cache.lengths_on_device().device(),
        std::vector<const torch::Tensor*>{&p.cache.lengths_on_device(), &block->tokens, &block->positions,
                                          &block->mask, &block->logits, &block->hidden},
        std::vector<const torch::Tensor*>{&block->logits, &block->hidden});
    return {out.logits, out.hidden};
  }
  auto& b = *block;
  b.graphs->run({cache.batch(), T, keys}, [&] {
    const auto out = run(b.tokens, b.positions, b.mask);
    b.logits.copy_(out.logits);
    b.hidden.copy_(out.hidden);
  });
  return {b.logits.clone(), b.hidden.clone()};
}

}  // namespace vispec
