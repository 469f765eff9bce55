#include "models/gpt/rope_1d.h"

#include "core/check.h"

namespace vispec {

torch::Tensor rope_1d_table(int64_t positions, int64_t head_dim, double base) {
  VISPEC_ASSERT(head_dim % 2 == 0, "1D RoPE needs an even head_dim, got ", head_dim);
  // inv_freq = 1 / base^(arange(0, Dh, 2) / Dh), then position * inv_freq, all in float32 (Hugging Face).
  auto exponents = torch::arange(0, head_dim, 2, torch::kInt64).to(torch::kFloat32) / float(head_dim);
  auto inv_freq = 1.0 / torch::pow(torch::scalar_tensor(base, torch::kFloat32), exponents);
  auto angles = torch::outer(torch::arange(positions, torch::kInt64).to(torch::kFloat32), inv_freq);
  return torch::stack({torch::cos(angles), torch::sin(angles)}, -1);
}

torch::Tensor apply_rope_half_split(const torch::Tensor& x, const torch::Tensor& table_rows) {
  const int64_t half = x.size(3) / 2;
  auto xf = x.to(torch::kFloat32);
  auto x1 = xf.narrow(3, 0, half), x2 = xf.narrow(3, half, half);
  auto fc = table_rows.unsqueeze(2);  // [B, T, 1, Dh/2, 2]
  auto c = fc.select(-1, 0), s = fc.select(-1, 1);
  return torch::cat({x1 * c - x2 * s, x2 * c + x1 * s}, 3).to(x.scalar_type());
}

}  // namespace vispec
