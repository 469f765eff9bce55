#include "models/gpt/sequence_layout.h"

#include "core/check.h"

namespace vispec {

EolBlock eol_block(const torch::Tensor& positions, int64_t W, int64_t N, torch::Device device) {
  const auto pos = positions.to(torch::kCPU, torch::kInt64).contiguous();
  const int64_t B = pos.size(0), T = pos.size(1);
  const auto pa = pos.accessor<int64_t, 2>();
  EolBlock out;
  out.node_starts.assign(size_t(B), {});
  for (int64_t b = 0; b < B; ++b) {
    auto& starts = out.node_starts[size_t(b)];
    int64_t e = 0;
    for (int64_t t = 0; t < T; ++t) {
      starts.push_back(e);
      e += ends_row(pa[b][t], W, N) ? 2 : 1;
    }
    starts.push_back(e);
    out.entries = std::max(out.entries, e);
  }
  const int64_t E = out.entries;
  auto source = torch::zeros({B, E}, torch::kInt64), output = torch::zeros({B, T}, torch::kInt64);
  auto is_eol = torch::zeros({B, E}, torch::kBool), is_padding = torch::ones({B, E}, torch::kBool);
  auto sa = source.accessor<int64_t, 2>(), oa = output.accessor<int64_t, 2>();
  auto ea = is_eol.accessor<bool, 2>(), qa = is_padding.accessor<bool, 2>();
  for (int64_t b = 0; b < B; ++b) {
    const auto& starts = out.node_starts[size_t(b)];
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t e = starts[size_t(t)]; e < starts[size_t(t) + 1]; ++e) {
        sa[b][e] = t;
        qa[b][e] = false;
        ea[b][e] = e > starts[size_t(t)];
      }
      oa[b][t] = starts[size_t(t) + 1] - 1;  // the end-of-line entry where there is one
    }
  }
  out.source = source.to(device);
  out.is_eol = is_eol.to(device);
  out.is_padding = is_padding.to(device);
  out.output_entry = output.to(device);
  return out;
}

torch::Tensor eol_block_mask(const torch::Tensor& block_mask, const EolBlock& block) {
  const int64_t B = block.source.size(0), E = block.entries;
  auto bm = block_mask.to(block.source.device(), torch::kBool);
  const int64_t T = bm.size(-1);
  if (bm.dim() == 2) bm = bm.unsqueeze(0);
  bm = bm.expand({B, T, T});
  const auto& src = block.source;
  auto mask = bm.gather(1, src.unsqueeze(2).expand({B, E, T})).gather(2, src.unsqueeze(1).expand({B, E, E}));
  // A node does not see its own end-of-line entry (it comes after it).
  const auto same_node = src.unsqueeze(2).eq(src.unsqueeze(1));
  mask.logical_and_(~(same_node & (~block.is_eol).unsqueeze(2) & block.is_eol.unsqueeze(1)));
  const auto padding = block.is_padding.unsqueeze(2) | block.is_padding.unsqueeze(1);
  const auto eye = torch::eye(E, torch::TensorOptions().dtype(torch::kBool).device(src.device())).unsqueeze(0);
  return torch::where(padding, eye, mask);
}

}  // namespace vispec
