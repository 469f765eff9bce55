// 2D RoPE against a hand-computed case (docs/algorithms.md "The model").
#include <gtest/gtest.h>

#include "models/gpt/rope_2d.h"

namespace vispec {

TEST(Rope2d, TableMatchesHandComputedAngles) {
  // grid 2, head_dim 8: pairs 0,1 rotate by the row with frequencies 1 and 10000^(-4/8) = 0.01;
  // pairs 2,3 by the column with the same frequencies. Row 0 of the table is the condition position.
  auto t = rope_2d_table(2, 8, 10000.0, 1);
  ASSERT_EQ(t.sizes(), (std::vector<int64_t>{5, 4, 2}));
  EXPECT_EQ(t[0].abs().sum().item<float>(), 0.0f);  // all-zero row: cos = sin = 0 for the condition
  // image token 2 = (row 1, col 0)
  const double angles[4] = {1.0, 0.01, 0.0, 0.0};
  for (int j = 0; j < 4; ++j) {
    EXPECT_NEAR(t[3][j][0].item<double>(), std::cos(angles[j]), 1e-6) << "pair " << j;
    EXPECT_NEAR(t[3][j][1].item<double>(), std::sin(angles[j]), 1e-6) << "pair " << j;
  }
  // image token 1 = (row 0, col 1)
  const double angles1[4] = {0.0, 0.0, 1.0, 0.01};
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(t[2][j][1].item<double>(), std::sin(angles1[j]), 1e-6);
}

TEST(Rope2d, RotatesInterleavedPairs) {
  auto t = rope_2d_table(2, 8, 10000.0, 1);
  // x = pairs (1,0) (0,1) (2,0) (1,1) at image token 3 = (row 1, col 1): every pair angle is 1 or 0.01.
  auto x = torch::tensor({1.f, 0.f, 0.f, 1.f, 2.f, 0.f, 1.f, 1.f}).view({1, 1, 1, 8});
  auto y = apply_rope(x, t[4].view({1, 1, 4, 2})).view({8});
  const double c1 = std::cos(1.0), s1 = std::sin(1.0), c2 = std::cos(0.01), s2 = std::sin(0.01);
  const double expect[8] = {c1, s1, -s2, c2, 2 * c1, 2 * s1, c2 - s2, s2 + c2};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(y[i].item<double>(), expect[i], 1e-6) << "element " << i;
  // The condition row zeroes q and k entirely.
  auto z = apply_rope(x, t[0].view({1, 1, 4, 2}));
  EXPECT_EQ(z.abs().sum().item<float>(), 0.0f);
}

}  // namespace vispec
