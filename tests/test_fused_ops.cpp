// The fused operators (kernels/README.md): each CPU implementation against the composite formula it
// replaces, in float32 and bfloat16; a whole cached decode fused against composite for each model layout;
// the merged projections; and the ceiling of operators per transformer layer of an AR step. (Their CUDA
// kernels are held against these CPU implementations in test_devices.cpp and, at first use, by
// kernels/kernel_check.h.)
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ATen/record_function.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>
#include <iostream>
#include <string>
#include <vector>

#include "core/op_counter.h"
#include "decoding/ar.h"
#include "decoding/common/sampler.h"
#include "exact_distribution.h"
#include "kernels/draft_top_k.h"
#include "kernels/exp_f32.h"
#include "kernels/softmax_draw.h"
#include "kernels/linear.h"
#include "kernels/note_nonfinite.h"
#include "kernels/rms_norm.h"
#include "kernels/rope_write_kv.h"
#include "kernels/silu_mul.h"
#include "kernels/kernel_check.h"
#include "kernels/operator.h"
#include "kernels/vector_loops.h"
#include "models/gpt/gpt.h"
#include "models/gpt/rope_1d.h"
#include "models/gpt/rope_2d.h"
#include "tiny_models.h"
#include "workers/loaded_models.h"

namespace vispec {

namespace {

// Max |a - b| in float32, printed with what it measures.
double max_difference(const char* what, const torch::Tensor& a, const torch::Tensor& b) {
  const double d = (a.to(torch::kFloat32) - b.to(torch::kFloat32)).abs().max().item<double>();
  std::cout << what << ": max difference " << d << "\n";
  return d;
}

// One rounding of dtype at magnitude ~4 (the inputs' scale): float32 exact up to reassociation.
double tolerance(torch::ScalarType dtype) { return dtype == torch::kFloat32 ? 2e-6 : 4.0 / 128; }

// Names of the top-level operators a piece of code runs (core/op_counter.h's notion of one operator).
class OpNames {
 public:
  OpNames() {
    names() = {};
    depth() = 0;
    handle_ = at::addThreadLocalCallback(
        at::RecordFunctionCallback(&OpNames::enter, &OpNames::leave).scopes({at::RecordScope::FUNCTION}));
  }
  ~OpNames() { at::removeCallback(handle_); }
  std::vector<std::string> get() const { return names(); }

 private:
  static std::vector<std::string>& names() {
    static thread_local std::vector<std::string> n;
    return n;
  }
  static int& depth() {
    static thread_local int d = 0;
    return d;
  }
  static std::unique_ptr<at::ObserverContext> enter(const at::RecordFunction& fn) {
    if (depth()++ == 0) names().push_back(fn.name());
    return nullptr;
  }
  static void leave(const at::RecordFunction&, at::ObserverContext*) { --depth(); }
  at::CallbackHandle handle_;
};

}  // namespace

// The shared e^x of the CPU loops and the CUDA kernels: within 1 ulp of the exact e^x over the whole range of
// normal results (every 2^-10th float), 0 below it, inf above, NaN kept; and the vectorized silu loop gives
// the scalar formula's bits.
TEST(FusedOps, SharedExpIsWithinOneUlpAndTheVectorLoopEqualsTheScalar) {
  using kernels::exp_f32;
  double worst_ulps = 0;
  int64_t checked = 0;
  for (float x = -87.33f; x < 88.72f; x = std::nextafter(x + std::fabs(x) * 0x1p-10f, 100.0f), ++checked) {
    const double exact = std::exp(double(x));
    const float nearest = float(exact);
    const double ulp = double(std::nextafter(nearest, INFINITY)) - double(nearest);
    worst_ulps = std::max(worst_ulps, std::fabs(double(exp_f32(x)) - exact) / ulp);
  }
  std::cout << "exp_f32: " << checked << " arguments, worst " << worst_ulps << " ulp\n";
  EXPECT_GT(checked, 100000);
  EXPECT_LE(worst_ulps, 1.0);
  EXPECT_EQ(exp_f32(0.0f), 1.0f);
  EXPECT_EQ(exp_f32(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(exp_f32(-100.0f), 0.0f);
  EXPECT_EQ(exp_f32(100.0f), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(exp_f32(std::numeric_limits<float>::quiet_NaN())));

  std::vector<float> gate(1000), vectorized(gate.size());
  for (size_t i = 0; i < gate.size(); ++i) gate[i] = -60.0f + 0.1234f * float(i);
  kernels::cpu::silu_f32(gate.data(), vectorized.data(), int64_t(gate.size()));
  for (size_t i = 0; i < gate.size(); ++i) {
    const float scalar = gate[i] / (1.0f + exp_f32(-gate[i]));
    ASSERT_EQ(std::memcmp(&scalar, &vectorized[i], sizeof scalar), 0) << "silu of " << gate[i];
  }
}

// Every vispec:: operator is registered with an implementation on the CPU (its reference), and declares its entry in
// the kernel set (kernels/README.md): one per operator, versions from 1. The kernel set a job records is "fused-" and
// a digest of those entries, so an operator without one would change outputs unseen by a job's identity.
TEST(FusedOps, EveryOperatorHasACpuReferenceAndAnEntryInTheKernelSet) {
  std::vector<std::string> operators;
  for (const auto& name : c10::Dispatcher::singleton().getAllOpNames()) {
    if (name.name.rfind("vispec::", 0) != 0) continue;
    operators.push_back(name.name.substr(8));
    const auto op = c10::Dispatcher::singleton().findOp(name);
    ASSERT_TRUE(op.has_value()) << name.name;
    EXPECT_TRUE(op->hasComputedKernelForDispatchKey(c10::DispatchKey::CPU)) << name.name << " has no CPU reference";
  }
  EXPECT_GE(operators.size(), size_t(15));
  const auto entries = kernels::kernel_entries();
  std::vector<std::string> names;
  for (const auto& e : entries) {
    names.push_back(e.name);
    EXPECT_GE(e.version, 1) << e.name;
  }
  EXPECT_TRUE(std::adjacent_find(names.begin(), names.end()) == names.end()) << "an entry is declared twice";
  std::sort(operators.begin(), operators.end());
  EXPECT_EQ(names, operators) << "the kernel set's entries are not the operators";
  const auto set = kernels::kernel_set(torch::kCPU, torch::kFloat32);
  EXPECT_EQ(set.size(), std::string("fused-").size() + 8) << set;
  EXPECT_EQ(set.rfind("fused-", 0), size_t(0)) << set;
  EXPECT_EQ(kernels::kernel_set(torch::kCPU, torch::kBFloat16), set);
}

// The kernel checks a GPU runs before its first fused forward, run here with the CPU as "the device": each
// compares the CPU reference with itself, so each must pass. This runs every check's code (its inputs, shapes
// and calls through the operators' handles) where there is no GPU, so that a GPU's first use finds no mistake
// in the check itself. A build without nvcc has no checks to run.
TEST(FusedOps, EveryKernelCheckPassesWithTheCpuAsTheDevice) {
  torch::NoGradGuard no_grad;
  int checks = 0;
  for (const auto& e : kernels::kernel_entries()) {
    if (!e.check) continue;
    ++checks;
    for (const auto dtype : {torch::kFloat32, torch::kBFloat16, torch::kFloat16})
      EXPECT_EQ(e.check(torch::kCPU, dtype), "") << e.name << " " << dtype;
  }
  if (checks == 0) GTEST_SKIP() << "this build has no CUDA kernels, so no kernel checks";
  EXPECT_GE(checks, 13);
}

// A tree level's log-probs and their K largest in one operator are the chain's (CFG's mix, the sampler's
// processing, log, topk) bit for bit on the CPU, guided or not, at temperatures 0, 0.7 and 1: EAGLE-2's trees grow
// as they grew. One operator where the chain is five, and a NaN is noted as the samplers' watch notes it.
TEST(FusedOps, DraftTopKIsTheChainOfMixSoftmaxLogAndTopK) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(13);
  for (const bool guided : {true, false})
    for (const double temperature : {0.0, 0.7, 1.0}) {
      const auto logits = torch::randn({guided ? 6 : 3, 4, 50}) * 3;
      const auto flag = torch::zeros({}, torch::kBool);
      OpCounter counter;
      const auto [values, indices] = kernels::draft_top_k(logits, guided, 2.0, temperature, 7, flag);
      EXPECT_EQ(counter.ops(), 1);
      SamplingParams params;
      params.temperature = temperature;
      const auto mixed = guided ? cfg_combine(logits, 2.0) : logits;
      const auto log_probs = params.greedy() ? torch::log_softmax(mixed, -1) : target_probs(mixed, params).log();
      const auto [want_values, want_indices] = log_probs.topk(7, -1);
      EXPECT_TRUE(torch::equal(values, want_values)) << guided << " " << temperature;
      EXPECT_TRUE(torch::equal(indices, want_indices)) << guided << " " << temperature;
      EXPECT_FALSE(flag.item<bool>());
      auto bad = logits.clone();
      bad[1][2][30] = std::numeric_limits<float>::quiet_NaN();
      kernels::draft_top_k(bad, guided, 2.0, temperature, 7, flag);
      EXPECT_TRUE(flag.item<bool>()) << guided << " " << temperature;
    }
  EXPECT_THROW(kernels::draft_top_k(torch::zeros({3, 8}), true, 2.0, 1.0, 2, torch::zeros({}, torch::kBool)),
               std::exception);  // guided rows come in [cond; uncond] pairs
}

// A draft's distribution and its draw in one operator are the chain's (the sampler's processing, then the inverse-CDF
// draw) bit for bit on the CPU, at temperatures 0.7 and 1, with uniforms read through a stride (a column of an
// iteration's uniforms): SD, SSD, SJD and MuLo-SD draw the tokens they drew. One operator where the chain is seven;
// probs_and_draw takes the chain where the sampler filters (top-k), with the same results as the chain.
TEST(FusedOps, SoftmaxDrawIsTheChainOfSoftmaxAndTheInverseCdfDraw) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(14);
  for (const double temperature : {0.7, 1.0}) {
    const auto logits = torch::randn({5, 70}) * 3;
    const auto uniforms = torch::rand({5, 3}, torch::kFloat64);
    const auto u = uniforms.select(1, 1);
    const auto flag = torch::zeros({}, torch::kBool);
    OpCounter counter;
    const auto [probs, tokens] = kernels::softmax_draw(logits, u, temperature, flag);
    EXPECT_EQ(counter.ops(), 1);
    SamplingParams params;
    params.temperature = temperature;
    const auto want_probs = target_probs(logits, params);
    EXPECT_TRUE(torch::equal(probs, want_probs)) << temperature;
    EXPECT_TRUE(torch::equal(tokens, sample_from_probs(want_probs, u))) << temperature;
    EXPECT_FALSE(flag.item<bool>());
    const auto drawn = probs_and_draw(logits.view({5, 1, 70}), params, u.view({5, 1}));
    EXPECT_TRUE(torch::equal(drawn.first, want_probs.view({5, 1, 70})));
    EXPECT_TRUE(torch::equal(drawn.second, tokens.view({5, 1})));
    params.top_k = 20;  // filtered: the chain
    const auto filtered = probs_and_draw(logits, params, u);
    EXPECT_TRUE(torch::equal(filtered.first, target_probs(logits, params)));
    EXPECT_TRUE(torch::equal(filtered.second, sample_from_probs(filtered.first, u)));
    auto bad = logits.clone();
    bad[3][9] = -std::numeric_limits<float>::infinity();
    kernels::softmax_draw(bad, u, temperature, flag);
    EXPECT_TRUE(flag.item<bool>()) << temperature;
  }
  EXPECT_THROW(kernels::softmax_draw(torch::zeros({3, 8}), torch::rand({3}, torch::kFloat64), 0.0,
                                     torch::zeros({}, torch::kBool)),
               std::exception);  // a greedy draw is the argmax, not this
}

// Guidance in one pass gives the composite formula's bits, from float32 and bfloat16 logits of a step and a
// block.
TEST(FusedOps, CfgMixEqualsTheCompositeFormulaBitForBit) {
  torch::manual_seed(11);
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    for (const auto& shape : {std::vector<int64_t>{6, 513}, std::vector<int64_t>{4, 5, 300}}) {
      const auto logits = (torch::randn(shape) * 7).to(dtype);
      for (const double scale : {1.0, 4.0, 7.5}) {
        const auto fused = cfg_combine(logits, scale);
        torch::Tensor composite;
        {
          kernels::CompositeOnly plain;
          composite = cfg_combine(logits, scale);
        }
        EXPECT_TRUE(torch::equal(fused, composite)) << dtype << " " << logits.sizes() << " scale " << scale;
        EXPECT_EQ(fused.scalar_type(), torch::kFloat32);
      }
    }
  }
}

// The non-finite watch in one operator sets the flag exactly where the composite formula does: all finite
// (including the largest finite values and subnormals), a NaN, +infinity or -infinity at the first, a middle or
// the last element, in every floating dtype; and a flag already set stays set. The samplers note through it.
TEST(FusedOps, NoteNonfiniteSetsTheFlagWhereTheCompositeWatchDoes) {
  torch::manual_seed(12);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16, torch::kHalf, torch::kFloat64}) {
    const auto finfo_max = dtype == torch::kHalf ? 65504.0 : dtype == torch::kBFloat16 ? 3.38e38 : 3.4e38;
    for (const double bad : {0.0, nan, inf, -inf}) {
      for (const int64_t at : {int64_t(0), int64_t(70000), int64_t(3 * 65537 - 1)}) {
        auto x = (torch::randn({3, 65537}) * 5).to(dtype);
        x.view(-1)[1] = finfo_max;  // finite: the exponent is not all ones
        x.view(-1)[2] = 1e-40;      // a subnormal float32 (zero in half)
        if (bad != 0.0) x.view(-1)[at] = bad;
        for (const bool set : {false, true}) {
          const auto flag = torch::full({}, set, torch::kBool);
          kernels::note_nonfinite(x, flag);
          const bool want = set || torch::isfinite(x).logical_not().any().item<bool>();
          EXPECT_EQ(flag.item<bool>(), want) << dtype << " " << bad << " at " << at << ", set " << set;
          EXPECT_EQ(want, set || bad != 0.0) << "the composite formula itself";
        }
      }
    }
  }
  EXPECT_THROW(kernels::note_nonfinite(torch::zeros({3}), torch::zeros({1}, torch::kBool)), std::exception);
  // The samplers' watch goes through it (as decoding runs, without gradients): one operator where the composite
  // is four.
  torch::NoGradGuard no_grad;
  const auto logits = torch::randn({2, 50});
  greedy_tokens(logits);  // the thread's flag is made at its first note
  OpCounter fused_ops;
  greedy_tokens(logits);
  const int64_t fused = fused_ops.ops();
  int64_t composite = 0;
  {
    kernels::CompositeOnly plain;
    OpCounter counter;
    greedy_tokens(logits);
    composite = counter.ops();
  }
  EXPECT_EQ(composite - fused, 3) << fused << " operators fused, " << composite << " composite";
}

TEST(FusedOps, NormsAndGateEqualTheCompositeFormulas) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(11);
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    const auto x = (torch::randn({3, 5, 48}) * 2).to(dtype), delta = torch::randn({3, 5, 48}).to(dtype);
    RMSNorm norm(48, 1e-5, torch::TensorOptions().dtype(dtype));
    norm->weight.normal_(1.0, 0.5);
    torch::Tensor composite, composite_sum, composite_gate;
    {
      const kernels::CompositeOnly plain;
      composite = norm(x);
      composite_sum = x + delta;
      composite_gate = torch::silu(x.narrow(-1, 0, 24)) * x.narrow(-1, 24, 24);
    }
    EXPECT_LE(max_difference("rms_norm", kernels::rms_norm(x, norm->weight, 1e-5), composite), tolerance(dtype));
    const auto [sum, normed] = kernels::add_rms_norm(x, delta, norm->weight, 1e-5);
    EXPECT_TRUE(torch::equal(sum, composite_sum));  // one rounding of the same sum
    {
      const kernels::CompositeOnly plain;
      composite = norm(composite_sum);
    }
    EXPECT_LE(max_difference("add_rms_norm", normed, composite), tolerance(dtype));
    EXPECT_LE(max_difference("silu_mul", kernels::silu_mul(x), composite_gate), tolerance(dtype));
    // SwiGLU's middle from x and the merged [w1; w3] is the product, then the gate: the same bits.
    const auto w13 = (torch::randn({2 * 24, 48}) / 7).to(dtype);
    const auto gate = kernels::linear_silu_mul(x, w13);
    EXPECT_EQ(gate.sizes(), (std::vector<int64_t>{3, 5, 24}));
    EXPECT_TRUE(torch::equal(gate, kernels::silu_mul(kernels::linear(x, w13))));
  }
}

TEST(FusedOps, RopeAndCacheWriteEqualTheCompositeRopeAndCopies) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(12);
  const int64_t B = 2, T = 3, H = 4, Hkv = 2, Dh = 8, S = 10;
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    for (const bool half_split : {false, true}) {
      const auto qkv = (torch::randn({B, T, (H + 2 * Hkv) * Dh}) * 2).to(dtype);
      const auto table = half_split ? rope_1d_table(S, Dh, 10000) : rope_2d_table(4, Dh, 10000, 1);
      const auto slots = torch::tensor({2, 5, 9, 0, 1, 7}, torch::kInt64).view({B, T});
      const auto rope = table.index_select(0, slots.reshape(-1)).view({B, T, Dh / 2, 2});
      auto k = torch::zeros({B, Hkv, S, Dh}, dtype), v = torch::zeros_like(k);
      const auto q = kernels::rope_write_kv(qkv, rope, k, v, slots, H, Hkv, half_split);
      // The composite: split, rotate, transpose, write at the slots.
      const auto rotate = half_split ? apply_rope_half_split : apply_rope;
      const auto parts = qkv.split({H * Dh, Hkv * Dh, Hkv * Dh}, -1);
      const auto q_ref = rotate(parts[0].reshape({B, T, H, Dh}), rope).transpose(1, 2);
      const auto k_rot = rotate(parts[1].reshape({B, T, Hkv, Dh}), rope).transpose(1, 2);
      auto k_ref = torch::zeros_like(k), v_ref = torch::zeros_like(v);
      const auto idx = slots.view({B, 1, T, 1}).expand({B, Hkv, T, Dh});
      k_ref.scatter_(2, idx, k_rot);
      v_ref.scatter_(2, idx, parts[2].reshape({B, T, Hkv, Dh}).transpose(1, 2));
      EXPECT_TRUE(q.is_contiguous());
      EXPECT_LE(max_difference("rope_write_kv q", q, q_ref), tolerance(dtype)) << half_split;
      EXPECT_LE(max_difference("rope_write_kv keys", k, k_ref), tolerance(dtype)) << half_split;
      EXPECT_TRUE(torch::equal(v, v_ref)) << "values are copied, not computed";
    }
  }
  // A slot outside the cache is refused before anything is written.
  auto k = torch::zeros({1, 1, 4, 4}), v = torch::zeros_like(k);
  EXPECT_THROW(kernels::rope_write_kv(torch::ones({1, 1, 12}), torch::ones({1, 1, 2, 2}), k, v,
                                      torch::full({1, 1}, 4, torch::kInt64), 1, 1, false),
               std::exception);
  EXPECT_EQ(k.abs().sum().item<float>(), 0.f);
}

// The fused sampler draws the composite chain's tokens (decoding/common/sampler.h: target_probs, then the float64
// inverse CDF) for every setting of the chain, and notes non-finite logits in the same flag.
TEST(FusedOps, SamplerDrawsTheCompositeChainsTokens) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(15);
  const int64_t B = 3000, V = 50;
  const auto logits = torch::randn({B, V}) * 2.5;
  const auto u = torch::rand({B}, torch::kFloat64);
  for (const auto& [temperature, top_k, top_p] : {std::tuple<double, int64_t, double>{0.0, 0, 1.0},
                                                  {1.0, 0, 1.0},
                                                  {0.6, 10, 1.0},
                                                  {1.0, 0, 0.7},
                                                  {1.4, 20, 0.9}}) {
    SamplingParams p;
    p.temperature = temperature, p.top_k = top_k, p.top_p = top_p;
    torch::Tensor composite;
    {
      const kernels::CompositeOnly plain;
      composite = next_tokens(logits, p, u);
    }
    const auto fused = next_tokens(logits, p, u);
    const int64_t differ = fused.ne(composite).sum().item<int64_t>();
    std::cout << "T " << temperature << " top_k " << top_k << " top_p " << top_p << ": " << differ << " of " << B
              << " tokens differ\n";
    EXPECT_EQ(differ, 0);
  }
  nonfinite_watch::reset();
  SamplingParams p;
  next_tokens(logits, p, u);
  EXPECT_FALSE(nonfinite_watch::seen(nonfinite_watch::Source::kLogits));
  auto bad = logits.clone();
  bad[5][7] = std::numeric_limits<float>::quiet_NaN();
  next_tokens(bad, p, u);
  EXPECT_TRUE(nonfinite_watch::seen(nonfinite_watch::Source::kLogits));
  nonfinite_watch::reset();
}

// A whole decode (prefill, then single steps and a 3-token block) of each model layout, fused against
// composite: LlamaGen's (fused wqkv, 2D RoPE), the Hugging Face layout (separate q, k, v: merged at the first
// fused forward), 1D RoPE and grouped-query attention.
TEST(FusedOps, CachedDecodeEqualsTheCompositeForEveryLayout) {
  torch::NoGradGuard no_grad;
  struct Layout {
    const char* name;
    bool fused_qkv;
    RopeKind rope;
    int64_t kv_heads;
  };
  for (const auto& layout :
       {Layout{"llamagen", true, RopeKind::grid_2d, 0}, Layout{"separate qkv", false, RopeKind::grid_2d, 0},
        Layout{"1d rope, gqa", false, RopeKind::sequence_1d, 2}}) {
    auto c = test::tiny_gpt_config();
    c.fused_qkv = layout.fused_qkv;
    c.rope = layout.rope;
    c.n_kv_head = layout.kv_heads;
    torch::manual_seed(13);
    Gpt gpt(c);
    for (auto& p : gpt->parameters()) p.normal_(0.0, 0.3);
    gpt->eval();
    const auto cond = gpt->embed_classes(torch::tensor({0, 2}, torch::kInt64));
    auto decode = [&](bool fused) {
      std::unique_ptr<kernels::CompositeOnly> plain;
      if (!fused) plain = std::make_unique<kernels::CompositeOnly>();
      auto cache = gpt->make_cache(2, 4);
      std::vector<torch::Tensor> logits{gpt->prefill(cache, cond, {}).logits};
      cache.advance();
      for (int64_t p = 0; p < 3; ++p) {
        logits.push_back(gpt->decode_block(cache, torch::full({2, 1}, 5 + p, torch::kInt64),
                                           torch::full({2, 1}, p, torch::kInt64), {})
                             .logits);
        cache.advance();
      }
      const auto positions = torch::arange(3, 6, torch::kInt64).expand({2, 3});
      logits.push_back(gpt->decode_block(cache, torch::tensor({{1, 2, 3}, {4, 5, 6}}), positions, {}).logits);
      return torch::cat(logits, 1);
    };
    const auto composite = decode(false), fused = decode(true);
    EXPECT_LE(max_difference(layout.name, fused, composite), 1e-4) << layout.name;
    if (!layout.fused_qkv) {  // the separate projections are views into one merged matrix now
      const auto& a = gpt->layers[0]->as<TransformerBlock>()->attention;
      EXPECT_EQ(static_cast<char*>(a->wk->weight.data_ptr()),
                static_cast<char*>(a->wq->weight.data_ptr()) + a->wq->weight.numel() * a->wq->weight.element_size());
    }
  }
}

// The merged matrix follows the model: after a move to another dtype it is made again from the new weights.
TEST(FusedOps, MergedWeightsFollowAMoveToAnotherDtype) {
  torch::NoGradGuard no_grad;
  auto gpt = test::tiny_gpt(3);
  auto& ffn = gpt->layers[0]->as<TransformerBlock>()->feed_forward;
  const auto w1 = ffn->w1->weight.clone(), w3 = ffn->w3->weight.clone();
  const auto& merged = ffn->merged_w13.of({&ffn->w1->weight, &ffn->w3->weight});
  EXPECT_TRUE(torch::equal(merged, torch::cat({w1, w3})));
  EXPECT_EQ(ffn->w1->weight.data_ptr(), merged.data_ptr());
  gpt->to(torch::kBFloat16);
  const auto& again = ffn->merged_w13.of({&ffn->w1->weight, &ffn->w3->weight});
  EXPECT_EQ(again.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(again, torch::cat({w1, w3}).to(torch::kBFloat16)));
  EXPECT_EQ(ffn->w3->weight.data_ptr(), again[w1.size(0)].data_ptr());
}

// An AR step of a transformer layer is at most 8 operators (the issue asked for 12: add + norm, qkv, RoPE + cache
// write, attention, output, add + norm, w1|w3 with the gate, w2; each residual add travels into the next norm),
// measured as the difference between models of 2 and 4 layers; the list is printed.
TEST(FusedOps, AnArStepIsAtMostEightOperatorsPerLayer) {
  torch::NoGradGuard no_grad;
  auto step_ops = [](int64_t layers) {
    auto c = test::tiny_gpt_config();
    c.n_layer = layers;
    torch::manual_seed(14);
    Gpt gpt(c);
    gpt->eval();
    auto cache = gpt->make_cache(2, 0);
    gpt->prefill(cache, gpt->embed_classes(torch::tensor({0, 1}, torch::kInt64)), {});
    cache.advance();
    const auto token = torch::zeros({2, 1}, torch::kInt64);
    gpt->decode_block(cache, token, torch::zeros({2, 1}, torch::kInt64), {});  // warm: merges, first-use work
    cache.advance();
    OpNames names;
    OpCounter counter;
    gpt->decode_block(cache, token, torch::ones({2, 1}, torch::kInt64), {});
    return std::make_pair(counter.ops(), names.get());
  };
  const auto [two, two_names] = step_ops(2);
  const auto [four, four_names] = step_ops(4);
  const double per_layer = double(four - two) / 2;
  std::cout << "AR step: " << two << " operators with 2 layers, " << four << " with 4: " << per_layer << " per layer\n";
  std::string listing;
  for (const auto& n : two_names) listing += n + " ";
  std::cout << "2 layers: " << listing << "\n";
  EXPECT_LE(per_layer, 8.0) << listing;
}

// The bench's aten_ops_per_image for AR on the embedded model at the demo's batch of 20 (vispec bench counts
// every operator of a decode, prefill and sampling included): at most a quarter of the composite formulas'.
TEST(FusedOps, ArOnTheEmbeddedModelIssuesAQuarterOfTheCompositeOperatorsPerImage) {
  const auto config = load_model_config(std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist.yaml");
  const auto models = load_models(config, torch::kCPU);
  ArDecoder ar(models.gpt, test::guided_sampling(1.0));
  const auto request = test::requests(0, 20);
  auto per_image = [&](bool fused) {
    std::unique_ptr<kernels::CompositeOnly> plain;
    if (!fused) plain = std::make_unique<kernels::CompositeOnly>();
    ar.decode(request);  // warm
    OpCounter counter;
    ar.decode(request);
    return double(counter.ops()) / 20.0;
  };
  const double composite = per_image(false), fused = per_image(true);
  std::cout << "AR, embedded model, batch 20: " << fused << " operators per image fused, " << composite
            << " composite (" << fused / composite << ")\n";
  EXPECT_LE(fused, composite / 4);
}

}  // namespace vispec
