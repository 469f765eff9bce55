// MuLo-SD's pieces written so far: the local expansion set R_X (paper 000, Eq. 6-7) on hand-made cases, and
// the row-causal resamplers U_2 / D_2: shapes round-trip, and a change in a later row never changes an
// earlier output row.
#include <gtest/gtest.h>

#include "decoding/mulo_sd.h"
#include "models/mulo_resamplers.h"

namespace vispec {

TEST(MuloSd, LocalExpansionEqualsEquations6And7OnHandMadeCases) {
  using V = std::vector<int64_t>;
  // An 8-wide grid, drafted span rows 2-3 (cells 16..31). Reject (2, 3) = 19, radius 1: rows 1..3, columns
  // 2..4, at or after t0 = 19 and inside the span: 19, 20 on row 2 (18 precedes t0), 26, 27, 28 on row 3.
  EXPECT_EQ(local_expansion({19}, 8, 1, 16, 32), (V{19, 20, 26, 27, 28}));
  // Adding (3, 6) = 30: its window reaches back to row 2 (21, 22, 23: after t0 = 19) and to columns 5..7.
  EXPECT_EQ(local_expansion({30, 19}, 8, 1, 16, 32), (V{19, 20, 21, 22, 23, 26, 27, 28, 29, 30, 31}));
  // The left edge clips columns; rows past the span are not drafted yet.
  EXPECT_EQ(local_expansion({8}, 8, 2, 8, 24), (V{8, 9, 10, 16, 17, 18}));
  // Radius 0: the rejected cells alone; nothing rejected: nothing resampled.
  EXPECT_EQ(local_expansion({21, 17}, 8, 0, 16, 32), (V{17, 21}));
  EXPECT_TRUE(local_expansion({}, 8, 3, 16, 32).empty());
}

TEST(MuloSd, ResamplersRoundTripShapesAndAreRowCausal) {
  torch::manual_seed(3);
  torch::NoGradGuard no_grad;
  MuloResamplerConfig c;
  MuloResampler up(c, +1), down(c, -1);
  const auto low = torch::randn({2, c.embed_dim, 4, 4});
  const auto high = up(low);
  EXPECT_EQ(high.sizes(), (std::vector<int64_t>{2, c.embed_dim, 8, 8}));
  EXPECT_EQ(down(high).sizes(), low.sizes());
  // U_2: changing low-res rows >= 2 leaves high-res rows < 4 as they were and changes row 4.
  auto low2 = low.clone();
  low2.narrow(2, 2, 2).add_(1.0);
  const auto high2 = up(low2);
  EXPECT_TRUE(torch::equal(high2.narrow(2, 0, 4), high.narrow(2, 0, 4)));
  EXPECT_GT((high2.narrow(2, 4, 1) - high.narrow(2, 4, 1)).abs().max().item<double>(), 1e-4);
  // D_2: changing high-res rows >= 4 leaves low-res rows < 2 as they were and changes row 2.
  const auto base = down(high);
  auto high3 = high.clone();
  high3.narrow(2, 4, 4).add_(1.0);
  const auto changed = down(high3);
  EXPECT_TRUE(torch::equal(changed.narrow(2, 0, 2), base.narrow(2, 0, 2)));
  EXPECT_GT((changed.narrow(2, 2, 1) - base.narrow(2, 2, 1)).abs().max().item<double>(), 1e-4);
}

}  // namespace vispec
