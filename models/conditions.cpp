#include "models/conditions.h"

#include "core/check.h"

namespace vispec {

Conditions class_conditions(const std::vector<int64_t>& class_ids) {
  Conditions c;
  c.class_ids = torch::tensor(class_ids, torch::kInt64);
  return c;
}

Conditions caption_conditions(const std::vector<torch::Tensor>& features, int64_t C) {
  VISPEC_ASSERT(!features.empty(), "no captions");
  const int64_t B = int64_t(features.size()), D = features[0].size(-1);
  Conditions c;
  c.captions = torch::zeros({B, C, D}, torch::kFloat32);
  c.caption_mask = torch::zeros({B, C}, torch::kBool);
  for (int64_t b = 0; b < B; ++b) {
    const auto& f = features[size_t(b)];
    const int64_t L = f.size(0);
    VISPEC_ASSERT(f.dim() == 2 && f.size(1) == D && L <= C, "caption features of shape ", f.sizes(),
                  " for ", C, " positions of width ", D);
    c.captions[b].narrow(0, C - L, L).copy_(f);
    c.caption_mask[b].narrow(0, C - L, L).fill_(true);
  }
  return c;
}

}  // namespace vispec
