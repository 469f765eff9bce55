#include "workers/distill_capture.h"

#include <cstring>

namespace vispec {

torch::Tensor teacher_forced_hidden(Gpt& gpt, const torch::Tensor& class_ids, const torch::Tensor& tokens,
                                    int streams) {
  torch::NoGradGuard no_grad;
  const auto device = gpt->output->weight.device();
  const int64_t B = tokens.size(0), T = tokens.size(1);
  auto cond = gpt->embed_classes(class_ids.to(device));
  auto inputs = tokens.narrow(1, 0, T - 1).to(device);
  if (streams == 2) {  // one batch of 2B rows: [cond; uncond], as CFG decoding runs them
    cond = torch::cat({cond, gpt->null_condition(B)});
    inputs = torch::cat({inputs, inputs});
  }
  auto hidden = gpt->forward_sequence(cond, inputs).hidden.to(torch::kFloat32);  // [S*B, T, D]
  return hidden.view({streams, B, T, hidden.size(-1)}).transpose(0, 1).contiguous();
}

DistillBatch distill_batch(const torch::Tensor& hidden, const torch::Tensor& tokens, const torch::Tensor& class_ids,
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
  const auto c = class_ids.to(torch::kCPU, torch::kInt64).contiguous();
  b.class_id.assign(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
  b.sample_id.assign(sample_ids.begin(), sample_ids.end());
  return b;
}

}  // namespace vispec
