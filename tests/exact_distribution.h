// Exact target distributions of the first image tokens of a small-vocabulary model, and a chi-square test of a
// decoder's samples against them: how the lossless speculative decoders are proven to sample the target.
#pragma once

#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>

#include "decoding/common/decoder.h"
#include "decoding/common/sampler.h"
#include "models/gpt/gpt.h"

namespace vispec::test {

// The sampling setting of the decoder tests: CFG 2 at `temperature` (0 = greedy), no truncation.
inline SamplingParams guided_sampling(double temperature) {
  SamplingParams p;
  p.cfg_scale = 2.0;
  p.temperature = temperature;
  return p;
}

// Samples per chi-square test: 4000, or VISPEC_CHI_SAMPLES for a stronger run by hand.
inline int64_t chi_samples() {
  const char* v = std::getenv("VISPEC_CHI_SAMPLES");
  return v ? std::atoll(v) : 4000;
}

// Samples first .. first + count - 1, classes cycling 0, 1, 2 (or all `cls`).
inline DecodeRequest requests(int64_t first, int64_t count, int64_t cls = -1) {
  DecodeRequest r;
  r.seed = 99;
  std::vector<int64_t> classes;
  for (int64_t i = 0; i < count; ++i) {
    classes.push_back(cls >= 0 ? cls : (first + i) % 3);
    r.sample_ids.push_back(uint64_t(first + i));
  }
  r.conditions = class_conditions(classes);
  return r;
}

// Exact distribution of the next token after `prefix` [M, t] for class c under CFG (what AR samples from).
// The model may be on any device; the result is on the CPU.
inline torch::Tensor exact_next(Gpt& gpt, int64_t cls, const torch::Tensor& prefix, const SamplingParams& params) {
  torch::NoGradGuard no_grad;
  const int64_t M = prefix.size(0);
  const auto device = gpt->device();
  auto ids =
      torch::cat({torch::full({M}, cls, torch::kInt64), torch::full({M}, gpt->config().num_classes, torch::kInt64)});
  auto out = gpt->forward_sequence(gpt->embed_classes(ids.to(device)), torch::cat({prefix, prefix}).to(device));
  return target_probs(cfg_combine(out.logits.select(1, -1), params.cfg_scale), params).to(torch::kCPU, torch::kFloat64);
}

// Pearson chi-square of counts against probabilities, cells with expected count < 5 pooled into one.
struct ChiSquare {
  double stat = 0;
  int64_t df = 0;
  // Upper 0.1% point (Wilson-Hilferty): exceeded by chance once in a thousand runs of a correct sampler.
  double critical() const {
    const double k = double(df), z = 3.090;
    return k * std::pow(1 - 2 / (9 * k) + z * std::sqrt(2 / (9 * k)), 3);
  }
};
inline ChiSquare chi_square(const torch::Tensor& counts, const torch::Tensor& probs) {
  const double n = counts.sum().item<double>();
  ChiSquare c;
  double pooled_obs = 0, pooled_exp = 0;
  int64_t cells = 0;
  for (int64_t i = 0; i < counts.numel(); ++i) {
    const double e = n * probs.reshape(-1)[i].item<double>(), o = counts.reshape(-1)[i].item<double>();
    if (e < 5) {
      pooled_obs += o;
      pooled_exp += e;
      continue;
    }
    c.stat += (o - e) * (o - e) / e;
    ++cells;
  }
  if (pooled_exp > 0) {
    c.stat += (pooled_obs - pooled_exp) * (pooled_obs - pooled_exp) / pooled_exp;
    ++cells;
  }
  c.df = cells - 1;
  return c;
}

struct FirstTokens {
  torch::Tensor joint01;  // [V, V] counts of (x0, x1)
  torch::Tensor x2;       // [V] counts
};
inline FirstTokens count_first_tokens(Decoder& decoder, int64_t cls, int64_t samples, int64_t V) {
  FirstTokens f{torch::zeros({V, V}, torch::kFloat64), torch::zeros({V}, torch::kFloat64)};
  for (int64_t start = 0; start < samples; start += 500) {
    auto r = requests(start, 500, cls);
    auto tokens = decoder.decode(r).tokens;
    for (int64_t b = 0; b < 500; ++b) {
      f.joint01[tokens[b][0].item<int64_t>()][tokens[b][1].item<int64_t>()] += 1;
      f.x2[tokens[b][2].item<int64_t>()] += 1;
    }
  }
  return f;
}

struct ExactFirstTokens {
  torch::Tensor joint01, x2;
};
inline ExactFirstTokens exact_first_tokens(Gpt& gpt, int64_t cls, const SamplingParams& params, int64_t V) {
  ExactFirstTokens e;
  const auto p0 = exact_next(gpt, cls, torch::zeros({1, 0}, torch::kInt64), params)[0];  // [V]
  const auto x0 = torch::arange(V, torch::kInt64).view({V, 1});
  const auto p1 = exact_next(gpt, cls, x0, params);  // [V, V]
  e.joint01 = p0.unsqueeze(1) * p1;
  const auto pairs = torch::stack({x0.repeat({1, V}).reshape(-1), torch::arange(V, torch::kInt64).repeat(V)}, 1);
  const auto p2 = exact_next(gpt, cls, pairs, params);  // [V*V, V]
  e.x2 = (e.joint01.reshape({-1, 1}) * p2).sum(0);
  return e;
}
// The exact law of whole images of `gpt` (N tokens over V codes, V^N sequences, indexed by their tokens as base-V
// digits, the first most significant) for class `cls`, and a decoder's counts of the same over `samples` samples.
inline torch::Tensor exact_sequences(Gpt& gpt, int64_t cls, const SamplingParams& params, int64_t V, int64_t N) {
  auto joint = exact_next(gpt, cls, torch::zeros({1, 0}, torch::kInt64), params)[0];  // [V]
  auto prefixes = torch::arange(V, torch::kInt64).view({V, 1});
  for (int64_t t = 1; t < N; ++t) {
    joint = (joint.view({-1, 1}) * exact_next(gpt, cls, prefixes, params)).view(-1);
    prefixes = torch::cat(
        {prefixes.repeat_interleave(V, 0), torch::arange(V, torch::kInt64).repeat(prefixes.size(0)).view({-1, 1})}, 1);
  }
  return joint;
}
inline torch::Tensor count_sequences(Decoder& decoder, int64_t cls, int64_t samples, int64_t V, int64_t N) {
  auto counts = torch::zeros({int64_t(std::pow(V, N))}, torch::kFloat64);
  auto digits = torch::ones({N}, torch::kInt64);
  for (int64_t i = N - 2; i >= 0; --i) digits[i] = digits[i + 1] * V;
  for (int64_t start = 0; start < samples; start += 500) {
    const auto tokens = decoder.decode(requests(start, 500, cls)).tokens;  // [500, N]
    counts.index_add_(0, (tokens * digits).sum(1), torch::ones({tokens.size(0)}, torch::kFloat64));
  }
  return counts;
}

// The test every lossless decoder must pass: `decoder` on chi_samples() samples of class 1 against the exact
// distribution of `target` (vocabulary V) under `params`. Prints and returns (joint of x0, x1; marginal of x2).
struct FirstTokenFit {
  ChiSquare joint01, x2;
  bool passes() const { return joint01.stat < joint01.critical() && x2.stat < x2.critical(); }
};
inline FirstTokenFit first_token_fit(Decoder& decoder, Gpt& target, const SamplingParams& params, int64_t V,
                                     const std::string& label) {
  const auto exact = exact_first_tokens(target, 1, params, V);
  const auto got = count_first_tokens(decoder, 1, chi_samples(), V);
  FirstTokenFit f{chi_square(got.joint01, exact.joint01), chi_square(got.x2, exact.x2)};
  std::cout << label << " (x0, x1): chi2 " << f.joint01.stat << " df " << f.joint01.df << " critical "
            << f.joint01.critical() << "; x2: chi2 " << f.x2.stat << " df " << f.x2.df << " critical "
            << f.x2.critical() << "\n";
  return f;
}

}  // namespace vispec::test
