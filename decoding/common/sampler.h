// Turning logits into tokens, as a chain of small stages (llama.cpp's sampler chain; LlamaGen's generate.py):
//
//   cfg_combine  ->  temperature  ->  top-k  ->  top-p  ->  softmax  ->  inverse-CDF sample(u)
//
// target_probs() runs the middle of the chain and returns the distribution every decoder samples from and
// every acceptance rule compares against. Greedy (temperature 0) returns the one-hot distribution at the
// argmax, so speculative decoders reduce to their deterministic form without special cases.
// The uniform u comes from core/rng (keyed by seed, sample id, position, purpose), never from a torch generator.
#pragma once

#include <torch/torch.h>

#include <utility>

#include "decoding/common/sampling_params.h"

namespace vispec {

// Non-finite logits (a NaN in the weights, an fp16 overflow, an absurd cfg_scale) would otherwise become token
// 0 without a word, and so would non-finite latents in the VQ's nearest-code search (MuLo-SD's resamplers).
// target_probs() notes, per thread, whether any logits it saw were NaN or infinite, and a decoder notes its
// other models' outputs the same way: one reduction on their device, no synchronisation; the worker reads the
// notes once, at the batch's end, and names the model they came from.
namespace nonfinite_watch {
enum class Source {
  kLogits,      // any model's logits: the target's or a drafter's (target_probs, the samplers, the draft top-k)
  kResamplers,  // MuLo-SD's resamplers' latents, before the nearest-code search
};
void reset();              // before a batch
bool seen(Source source);  // after it: reads the device flags (the batch's one synchronisation point anyway)
void note(const torch::Tensor& x, Source source);  // ORs "x has a NaN or infinity" into source's flag
// The flag itself, a 0-dim bool on `device` (made once per thread and device, never moved: a replayed graph
// ORs into the same flag that seen() reads): the fused sampler ORs into it.
const torch::Tensor& flag_on(const torch::Device& device, Source source = Source::kLogits);
}  // namespace nonfinite_watch

// logits [2B, ..., V] laid out [cond; uncond] -> u + s (c - u), float32 [B, ..., V].
torch::Tensor cfg_combine(const torch::Tensor& logits, double scale);
// Sets logits below the k-th largest to -inf (ties with the k-th are kept). logits [..., V].
torch::Tensor apply_top_k(const torch::Tensor& logits, int64_t k);
// Keeps the smallest set of most-likely tokens whose mass reaches p (LlamaGen/HF rule; at least one token).
torch::Tensor apply_top_p(const torch::Tensor& logits, double p);
// The processed distribution [..., V] float32 (CFG already applied).
torch::Tensor target_probs(const torch::Tensor& logits, const SamplingParams& params);
// Temperature 0 without one-hot rows: the argmax of (guided) logits [..., V] -> [...] int64, the token
// target_probs()'s one-hot distribution puts its mass on (non-finite logits noted the same way).
torch::Tensor greedy_tokens(const torch::Tensor& logits);
// The next tokens from logits [B, V]: greedy_tokens() at temperature 0, else a sample of target_probs() with
// the uniforms u [B]. Float32 logits take the fused sampler (kernels/sample_next.h: the same chain in one
// operator) where the fused operators run.
torch::Tensor next_tokens(const torch::Tensor& logits, const SamplingParams& params, const torch::Tensor& u);
// The processed distribution of logits [..., V] and a token drawn from it with the uniforms u [...]: target_probs()
// then sample_from_probs(), as (probs [..., V], tokens [...] int64). One operator (kernels/softmax_draw.h: the same
// chain inside it on the CPU) where the fused operators run, the logits are float32 and the sampler neither is
// greedy nor filters (no top-k, top-p); else the chain.
std::pair<torch::Tensor, torch::Tensor> probs_and_draw(const torch::Tensor& logits, const SamplingParams& params,
                                                       const torch::Tensor& u);
// Inverse-CDF sampling: probs [B, V] (need not be normalised), u [B] in [0, 1) -> tokens [B] int64.
torch::Tensor sample_from_probs(const torch::Tensor& probs, const torch::Tensor& u);
// The same for one distribution probs [V] and one uniform.
int64_t sample_token(const torch::Tensor& probs, double u);

// n draws without replacement from each row of q [B, M, V] (probabilities, on any device) by inverse CDF with
// the uniforms u [B, M, n]: draw j comes from q without the earlier draws, renormalised. Returns the tokens
// and each draw's conditional probability q(y_j) / (1 - sum_{l<j} q(y_l)), [B, M, n] on q's device; a draw from
// an exhausted row has probability 0. Where the fused operators run (kernels/kernel_check.h), one operator
// (kernels::draw_without_replacement, whose sums are added in another order); else the composite formulas.
std::pair<torch::Tensor, torch::Tensor> draw_without_replacement(const torch::Tensor& q, const torch::Tensor& u);

}  // namespace vispec
