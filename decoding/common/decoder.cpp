#include "decoding/common/decoder.h"

namespace vispec {

DecodeResult decode_in_rows(Decoder& decoder, const DecodeRequest& request) {
  const int64_t S = request.batch(), B = request.row_count();
  if (B == S || decoder.refills_rows()) return decoder.decode(request);
  DecodeResult all;
  std::vector<torch::Tensor> tokens;
  for (int64_t first = 0; first < S; first += B) {
    const int64_t count = std::min(B, S - first);
    std::vector<int64_t> index;
    for (int64_t s = first; s < first + count; ++s) index.push_back(s);
    DecodeRequest part;
    part.conditions = request.conditions.select(index);
    if (request.drafter_conditions.prompt_ids.defined())
      part.drafter_conditions = request.drafter_conditions.select(index);
    part.sample_ids.assign(request.sample_ids.begin() + first, request.sample_ids.begin() + first + count);
    part.seed = request.seed;
    auto result = decoder.decode(part);
    tokens.push_back(result.tokens);
    all.stats.insert(all.stats.end(), result.stats.begin(), result.stats.end());
  }
  all.tokens = torch::cat(tokens);
  return all;
}

}  // namespace vispec
