// AR: for each image position i in raster order, p_i = process(target logits), x_i ~ p_i with the uniform
// keyed by (seed, sample id, i, kSample), then one forward of x_i through the cached target.
#include "decoding/ar.h"

#include "core/rng.h"
#include "decoding/decode_rows.h"
#include "decoding/decoder_registry.h"

namespace vispec {

DecodeResult ArDecoder::decode(const DecodeRequest& request) {
  torch::NoGradGuard no_grad;
  const int64_t B = request.batch(), N = target_.gpt()->config().image_tokens();
  const auto device = target_.gpt()->device();
  const auto on_device = torch::TensorOptions().device(device);
  // Everything a step reads is on the device before the loop, and the tokens come back once after it: no step
  // waits for the host (on a GPU the host only queues kernels).
  const auto u = uniform_table(request.seed, request.sample_ids, uint32_t(N), Purpose::kSample).to(device);
  const auto step_mask = torch::ones({1, 1}, on_device.dtype(torch::kBool));
  auto tokens = torch::empty({B, N}, on_device.dtype(torch::kInt64));
  auto cache = target_.make_cache(B);
  auto out = target_.prefill(cache, request.conditions);
  cache.keep_all();
  for (int64_t i = 0; i < N; ++i) {
    auto probs = target_probs(out.logits.select(1, out.logits.size(1) - 1), params_);  // [B, V]
    auto next = sample_from_probs(probs, u.select(1, i));                               // [B]
    tokens.select(1, i).copy_(next);
    if (i + 1 == N) break;
    auto pos = torch::full({B, 1}, i, on_device.dtype(torch::kInt64));
    out = target_.decode_block(cache, next.view({B, 1}), pos, step_mask);
    cache.keep_all();
  }
  tokens = read_to_host(tokens);
  DecodeResult result{tokens, std::vector<SampleStats>(B)};
  for (auto& s : result.stats) {
    s.target_forwards = N;  // the prefill plus N - 1 single-token steps
    s.tokens = N;
  }
  return result;
}

namespace {
DecoderEntry ar_entry() {
  DecoderEntry e;
  e.name = "ar";
  e.summary = "autoregressive decoding, one target forward per token: the baseline";
  e.read = [](DecoderFields&, DecoderConfig&) {};
  e.build = [](const DecoderConfig& c, const DecoderModels& m) -> std::unique_ptr<Decoder> {
    return std::make_unique<ArDecoder>(m.target, c.sampling);
  };
  return e;
}
const DecoderRegistration kArRegistration(ar_entry());
}  // namespace

}  // namespace vispec
