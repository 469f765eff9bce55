#include "workers/distill_capture.h"

#include <cstring>

namespace vispec {

torch::Tensor teacher_forced_hidden(Gpt& gpt, const Conditions& conditions, const torch::Tensor& tokens, int streams) {
  torch::NoGradGuard no_grad;
  const auto device = gpt->device();
  const int64_t T = tokens.size(1);
  const auto inputs = tokens.narrow(1, 0, T - 1).to(device);
  // One forward per stream rather than one of 2B rows: with both streams the job took 2.74x the time of no
  // distillation as one 2B-row forward and 1.59x as two B-row forwards (bench/distill_overhead.sh, this CPU;
  // the [rows, heads, T, T] attention scores of the double batch fall out of cache).
  // Each stream's prefix as when decoding (decoding/common/cfg_model.h).
  std::vector<torch::Tensor> per_stream;
  for (int s = 0; s < streams; ++s) {
    const auto prefix = gpt->prefix(conditions, /*unconditional=*/s == 1);
    per_stream.push_back(gpt->forward_sequence(prefix.embeddings, inputs, prefix.visible).hidden);
  }
  return torch::stack(per_stream, 1).to(torch::kFloat32).contiguous();  // [B, S, T, D]
}

DistillBatch distill_batch(const torch::Tensor& hidden, const torch::Tensor& tokens, const Conditions& conditions,
                           const std::vector<uint64_t>& sample_ids, DistillDtype dtype) {
  DistillBatch b;
  b.count = tokens.size(0);
  const auto scalar = dtype == DistillDtype::kFloat32   ? torch::kFloat32
                      : dtype == DistillDtype::kFloat16 ? torch::kFloat16
                                                        : torch::kBFloat16;
  const auto h = hidden.to(torch::kCPU).to(scalar).contiguous();
  b.hidden.resize(size_t(h.numel() * h.element_size()));
  std::memcpy(b.hidden.data(), h.data_ptr(), b.hidden.size());
  const auto t = tokens.to(torch::kCPU, torch::kInt32).contiguous();
  b.tokens.assign(t.data_ptr<int32_t>(), t.data_ptr<int32_t>() + t.numel());
  if (conditions.kind() != ConditionKind::class_id) {
    b.class_id.assign(size_t(b.count), -1);  // io/distill_schema.h: no class (a caption or a prompt)
  } else {
    const auto c = conditions.class_ids.to(torch::kCPU, torch::kInt64).contiguous();
    b.class_id.assign(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
  }
  b.sample_id.assign(sample_ids.begin(), sample_ids.end());
  return b;
}

}  // namespace vispec
