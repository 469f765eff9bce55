// AR: for each image position i in raster order, p_i = process(target logits), x_i ~ p_i with the uniform
// keyed by (seed, sample id, i, kSample), then one forward of x_i through the cached target.
//
// Every step after the prefill is a static step (docs/decoding_common.md, "The static step"): it feeds `token`
// at the image position held in `step`, writes the KV cache at slots computed on the device, samples into
// `logits`, `tokens` and `token` and advances `step`, all in place on buffers made once per batch size (a
// Session). On CUDA it is replayed as a graph per length bucket (models/gpt/step_graph.h); the host only picks the
// bucket. Models whose image rows end in an end-of-line token decide a step's width on the host, so they step
// eagerly over the same buffers.
#include "decoding/ar.h"

#include <algorithm>

#include "core/rng.h"
#include "decoding/common/decode_state.h"
#include "decoding/common/decoder_registry.h"
#include "models/gpt/step_graph.h"

namespace vispec {

// Outside an anonymous namespace: ArDecoder::Session, which derives from it, is not in one.
struct ArBuffers {
  torch::Tensor u;       // [B, N] float64: every position's sampling uniform, uploaded per decode
  torch::Tensor tokens;  // [B, N] int64: the image
  torch::Tensor token;   // [B, 1] int64: the token the next step feeds
  torch::Tensor step;    // [1] int64: the image position the next step feeds (then samples the one after)
  torch::Tensor logits;  // [B, V] float32: the guided logits the last token was sampled from
  ArBuffers(int64_t B, int64_t N, int64_t V, torch::Device device) {
    const auto on = torch::TensorOptions().device(device);
    u = torch::zeros({B, N}, on.dtype(torch::kFloat64));
    tokens = torch::zeros({B, N}, on.dtype(torch::kInt64));
    token = torch::zeros({B, 1}, on.dtype(torch::kInt64));
    step = torch::zeros({1}, on.dtype(torch::kInt64));
    logits = torch::zeros({B, V}, on.dtype(torch::kFloat32));
  }
};

struct ArDecoder::Session : ArBuffers {
  Session(const CfgModel& target, int64_t batch)
      : ArBuffers(batch, target.gpt()->config().image_tokens(), target.gpt()->config().vocab_size,
                  target.gpt()->device()),
        B(batch), static_steps(!target.gpt()->config().row_ends()),
        cache(target.gpt()->make_cache(target.rows(batch), 0, /*static_lengths=*/static_steps)),
        graphs(target.gpt()->device(), {&u, &tokens, &token, &step, &logits, &cache.lengths_on_device()},
               {&logits, &tokens}) {}

  // Samples position `step` from `logits` into `tokens` and `token`.
  void sample(const SamplingParams& params) {
    const auto next = next_tokens(logits, params, u.index_select(1, step).view({B})).view({B, 1});
    tokens.index_copy_(1, step, next);
    token.copy_(next);
  }

  int64_t B;
  bool static_steps;  // a static cache where the model allows one
  KvCache cache;
  StepGraphs graphs;
};

ArDecoder::ArDecoder(Gpt target, SamplingParams params)
    : target_(std::move(target), params.cfg_scale), params_(params) {}
ArDecoder::~ArDecoder() = default;

ArDecoder::Session& ArDecoder::session(int64_t batch) {
  // One batch size at a time: a job's batches share theirs, and a last, smaller batch makes a new session.
  if (!session_ || session_->B != batch) {
    session_.reset();
    session_ = std::make_unique<Session>(target_, batch);
  }
  return *session_;
}

bool ArDecoder::replayed_graphs() const {
  return session_ && session_->graphs.replaying() && session_->graphs.graphs() > 0;
}

DecodeResult ArDecoder::decode(const DecodeRequest& request) {
  torch::NoGradGuard no_grad;
  const int64_t B = request.batch(), N = target_.gpt()->config().image_tokens();
  auto& s = session(B);
  // Everything a step reads is on the device before the loop, and the tokens come back once after it: no step
  // waits for the host (on a GPU the host only queues kernels, or replays a graph).
  s.u.copy_(uniform_table(request.seed, request.sample_ids, uint32_t(N), Purpose::kSample));
  s.cache.reset();
  auto out = target_.prefill(s.cache, request.conditions);
  s.cache.advance();
  s.step.zero_();
  s.logits.copy_(out.logits.select(1, out.logits.size(1) - 1));
  s.sample(params_);
  const auto positions = s.step.view({1, 1}).expand({B, 1});
  const auto forward = [&] {
    const auto o = target_.decode_block(s.cache, s.token, positions, torch::Tensor());
    s.cache.advance();
    s.logits.copy_(o.logits.select(1, 0));
    s.step.add_(1);
    s.sample(params_);
  };
  const int64_t last = step_limit_ > 0 ? std::min(N, step_limit_ + 1) : N;
  for (int64_t i = 1; i < last; ++i) {
    if (!s.static_steps) {
      forward();
      continue;
    }
    // Every run of the step (a capture runs it several times) plans from the same lengths, and the host knows
    // where a step leaves them: one entry further.
    const auto start = s.cache.lengths();
    auto after = start;
    for (auto& n : after) n += 1;
    s.graphs.run({s.cache.batch(), 1, s.cache.bucket_for(1)}, [&] {
      s.cache.settle(start);
      forward();
    });
    s.cache.settle(after);
  }
  // A copy even on the CPU (where reading to the host is the tensor itself): the next decode reuses s.tokens.
  auto tokens = read_to_host(s.tokens).clone();
  DecodeResult result{tokens, std::vector<SampleStats>(B)};
  for (auto& st : result.stats) {
    st.target_forwards = last;  // the prefill plus last - 1 single-token steps
    st.tokens = last;
    st.batch_iterations = last - 1;  // every row takes part in every step
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
