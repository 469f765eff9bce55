// Grouped speculative decoding (So et al., ICCV 2025): SJD whose drafts are accepted against the summed
// probability of a group of tokens near them. Training-free and lossy by design, within a bound logged per image.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "decoding/common/verify.h"

namespace vispec {

// The per-image figures GSD's decodes record (SampleStats::extra), in the order of gsd_figures' columns.
const std::vector<std::string>& gsd_figure_names();

// Adds one iteration's figures to `figures` [B, 2] (DecodeState::keep_figures'), over the drafts [B, G] each row
// tested (its accepted ones and the one it rejected, within its count [B]): p [B, >= G, V] and q [B, G, V] the
// target's and the drafts' distributions, verdict's probability GSD's acceptance of each draft. Column 0 sums
// |a_GSD(x) - a_exact(x)|, column 1 a_GSD(x) - a_exact(x) (the acceptance the grouping bought).
void add_gsd_figures(const torch::Tensor& figures, const torch::Tensor& p, const torch::Tensor& q,
                     const torch::Tensor& drafts, const torch::Tensor& count, const ChainVerdict& verdict);

}  // namespace vispec
