#include "models/gpt/rope_2d.h"

#include "core/check.h"

namespace vispec {

torch::Tensor rope_2d_table(int64_t grid_size, int64_t head_dim, double base, int64_t cls_token_num) {
  VISPEC_ASSERT(head_dim % 4 == 0, "2D RoPE needs head_dim divisible by 4, got ", head_dim);
  const int64_t quarter = head_dim / 4;
  // freq_i = base^(-4i/head_dim), i < head_dim/4
  auto freqs = torch::pow(base, -torch::arange(0, quarter, torch::kFloat64) * 4.0 / double(head_dim));
  auto t = torch::arange(grid_size, torch::kFloat64);
  auto angles = torch::outer(t, freqs);  // [grid, quarter]
  auto rows = angles.unsqueeze(1).expand({grid_size, grid_size, quarter});
  auto cols = angles.unsqueeze(0).expand({grid_size, grid_size, quarter});
  auto grid = torch::cat({rows, cols}, -1).reshape({grid_size * grid_size, 2 * quarter});
  auto table = torch::stack({torch::cos(grid), torch::sin(grid)}, -1).to(torch::kFloat32);
  return torch::cat({torch::zeros({cls_token_num, 2 * quarter, 2}), table}, 0);
}

torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& table_rows) {
  const auto s = x.sizes();  // [B, T, H, Dh]
  auto xs = x.to(torch::kFloat32).reshape({s[0], s[1], s[2], s[3] / 2, 2});
  auto fc = table_rows.unsqueeze(2);  // [B, T, 1, Dh/2, 2]
  auto x0 = xs.select(-1, 0), x1 = xs.select(-1, 1);
  auto c = fc.select(-1, 0), sn = fc.select(-1, 1);
  auto out = torch::stack({x0 * c - x1 * sn, x1 * c + x0 * sn}, -1);
  return out.flatten(3).to(x.scalar_type());
}

}  // namespace vispec
