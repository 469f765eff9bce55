// Devices and dtypes. The model, its KV cache, the sampler and the decoders on every device this machine has
// (the CPU always; CUDA where LibTorch was built with it and a GPU is visible, otherwise each CUDA case is
// skipped with a message saying so), and the embedded model with every decoder in bf16 and fp16 (on a CPU,
// each decoder in one of the two).
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <limits>
#include <memory>

#include "core/device.h"
#include "decoding/ar.h"
#include "decoding/common/decoder_registry.h"
#include "decoding/eagle2.h"
#include "decoding/sd.h"
#include "decoding/sjd.h"
#include "exact_distribution.h"
#include "kernels/attend_cache.h"
#include "kernels/linear.h"
#include "kernels/note_nonfinite.h"
#include "kernels/silu_mul.h"
#include "kernels/kernel_check.h"
#include "kernels/keyed_uniforms.h"
#include "models/checkpoints/load.h"
#include "models/model_config.h"
#include "scheduler/nccl_data_parallel.h"
#include "tiny_models.h"
#include "workers/loaded_models.h"

namespace vispec {

namespace {
constexpr const char* kNoCuda =
    "no CUDA device here: the CUDA case is skipped (scripts/gpu_check.sh runs the suite on a GPU machine)";

torch::Device cuda() { return torch::Device(torch::kCUDA, 0); }

// The embedded model as `vispec run` loads it (workers/loaded_models.h), in `dtype` on `device`.
struct Embedded {
  ModelConfig config;
  LoadedModels models;
  torch::Device device;
  Embedded(torch::Device d, const std::string& dtype) : device(d) {
    config = load_model_config(std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist.yaml");
    config.dtype = dtype;
    models = load_models(config, device);
  }
  std::unique_ptr<Decoder> decoder(const std::string& name, double temperature) const {
    DecoderSpec spec;
    spec.name = name;
    spec.name_where = "test: decoder.name";
    spec.params = {{"cfg_scale", 2.0}, {"temperature", temperature}};
    const auto parsed = parse_decoder(spec);
    return make_decoder(parsed, load_decoder_models(parsed, config, models.gpt, models.vq, device));
  }
};

// Decoders whose greedy tokens are AR's (the others relax the target distribution by design).
const std::vector<std::string> kExactDecoders = {"ar", "sd", "eagle2", "adt_tree", "eagle1", "sjd"};

// Every image token of `samples` decoded greedily by `name` on `e`.
torch::Tensor greedy_tokens(const Embedded& e, const std::string& name, int64_t samples) {
  return e.decoder(name, 0.0)->decode(test::requests(0, samples)).tokens;
}

// Every decoder of the factory decodes a sample with the embedded model in `dtype` on CUDA where there is
// one, and on the CPU: tokens of the right shape and range. Half precision on a CPU is slow (about 5 s per
// decoder), so there the two dtypes share the decoders out: `half` 0 (bf16) takes AR and every other decoder
// from the first, 1 (fp16) AR and the rest; each decoder runs in a half dtype on every CI run.
void every_decoder_runs(const std::string& dtype, int half) {
  std::vector<torch::Device> devices{torch::kCPU};
  if (cuda_usable()) devices.push_back(cuda());
  else std::cout << kNoCuda << "\n";
  for (const auto device : devices) {
    const Embedded e(device, dtype);
    EXPECT_EQ(e.models.gpt->tok_embeddings->weight.scalar_type(), model_dtype(dtype));
    EXPECT_EQ(e.models.gpt->device(), device);
    const auto names = known_decoders();
    for (size_t i = 0; i < names.size(); ++i) {
      const auto& name = names[i];
      if (device.is_cpu() && name != "ar" && int(i % 2) != half) continue;
      const auto out = e.decoder(name, 1.0)->decode(test::requests(0, 1));
      ASSERT_EQ(out.tokens.sizes(), (std::vector<int64_t>{1, 256})) << name << " " << dtype << " " << device;
      EXPECT_GE(out.tokens.min().item<int64_t>(), 0) << name << " " << dtype;
      EXPECT_LT(out.tokens.max().item<int64_t>(), 512) << name << " " << dtype;
    }
  }
}
}  // namespace

TEST(Devices, EveryDecoderRunsInBf16) { every_decoder_runs("bf16", 0); }
TEST(Devices, EveryDecoderRunsInFp16) { every_decoder_runs("fp16", 1); }

// Half precision changes the logits a little, not the model: teacher-forced logits of a real token grid stay
// close to float32's, and the precision rules hold (KV cache in the model dtype, logits in float32).
TEST(Devices, HalfPrecisionLogitsStayCloseToFloat32) {
  torch::NoGradGuard no_grad;
  const Embedded ref(torch::kCPU, "fp32");
  const auto tokens = greedy_tokens(ref, "ar", 2);
  const auto classes = test::requests(0, 2).conditions.class_ids;
  auto fp32 = ref.models.gpt;
  const auto reference = fp32->forward_sequence(fp32->embed_classes(classes), tokens.narrow(1, 0, 255)).logits;
  for (const std::string dtype : {"bf16", "fp16"}) {
    const Embedded e(torch::kCPU, dtype);
    auto gpt = e.models.gpt;
    const auto out = gpt->forward_sequence(gpt->embed_classes(classes), tokens.narrow(1, 0, 255));
    EXPECT_EQ(out.logits.scalar_type(), torch::kFloat32);
    EXPECT_EQ(out.hidden.scalar_type(), model_dtype(dtype));
    auto cache = gpt->make_cache(1);
    cache.begin_block(1, torch::ones({1, 1}, torch::kBool));
    const auto kv = torch::zeros({1, 4, 1, 32}, model_dtype(dtype));
    EXPECT_EQ(cache.write(0, kv, kv).first.scalar_type(), model_dtype(dtype));
    const double diff = (out.logits - reference).abs().max().item<double>();
    const double spread = reference.std().item<double>();
    const double agree = (out.logits.argmax(-1) == reference.argmax(-1)).to(torch::kFloat64).mean().item<double>();
    std::cout << dtype << ": max |logit - fp32| " << diff << " (logit std " << spread << "), argmax agreement " << agree
              << "\n";
    EXPECT_LT(diff, 0.5 * spread) << dtype;
    EXPECT_GT(agree, 0.9) << dtype;
  }
}

TEST(Devices, KvCacheDecodingEqualsAFullForwardOnCuda) {
  if (!cuda_usable()) GTEST_SKIP() << kNoCuda;
  torch::NoGradGuard no_grad;
  auto gpt = test::tiny_gpt(1);
  gpt->to(cuda());
  const auto tokens = torch::randint(64, {2, 15}, torch::kInt64).to(cuda());
  const auto classes = torch::tensor({0, 2}, torch::kInt64).to(cuda());
  const auto full = gpt->forward_sequence(gpt->embed_classes(classes), tokens).logits;
  auto cache = gpt->make_cache(2);
  auto out = gpt->prefill(cache, gpt->embed_classes(classes));
  cache.advance();
  double worst = (out.logits.select(1, 0) - full.select(1, 0)).abs().max().item<double>();
  for (int64_t i = 0; i < 15; ++i) {
    const auto pos = torch::full({2, 1}, i, torch::TensorOptions().dtype(torch::kInt64).device(cuda()));
    out = gpt->decode_block(cache, tokens.narrow(1, i, 1), pos, torch::ones({1, 1}, torch::kBool));
    cache.advance();
    worst = std::max(worst, (out.logits.select(1, 0) - full.select(1, i + 1)).abs().max().item<double>());
  }
  EXPECT_LE(worst, 1e-3);
}

// The fused operators' CUDA kernels pass the check a GPU's first fused forward runs (each beside its CPU
// reference, kernels/kernel_check.h) in every dtype, and a cached decode on them equals the composite one.
TEST(Devices, FusedCudaKernelsEqualTheirCpuReference) {
  if (!cuda_usable()) GTEST_SKIP() << kNoCuda;
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16, torch::kFloat16})
    EXPECT_EQ(kernels::kernel_set(cuda(), dtype), kernels::kernel_set(torch::kCPU, dtype)) << dtype;
  torch::NoGradGuard no_grad;
  auto gpt = test::tiny_gpt(1);
  gpt->to(cuda());
  const auto classes = torch::tensor({0, 2}, torch::kInt64).to(cuda());
  auto decode = [&](bool fused) {
    std::unique_ptr<kernels::CompositeOnly> plain;
    if (!fused) plain = std::make_unique<kernels::CompositeOnly>();
    auto cache = gpt->make_cache(2);
    std::vector<torch::Tensor> logits{gpt->prefill(cache, gpt->embed_classes(classes)).logits};
    cache.advance();
    for (int64_t i = 0; i < 6; ++i) {
      const auto pos = torch::full({2, 1}, i, torch::TensorOptions().dtype(torch::kInt64).device(cuda()));
      logits.push_back(gpt->decode_block(cache, (pos * 7) % 64, pos, torch::ones({1, 1}, torch::kBool)).logits);
      cache.advance();
    }
    return torch::cat(logits, 1);
  };
  const double worst = (decode(true) - decode(false)).abs().max().item<double>();
  std::cout << "fused against composite on CUDA: max logit difference " << worst << "\n";
  EXPECT_LE(worst, 1e-3);
}

// The non-finite watch's kernel sets the flag where its CPU reference does: all finite, a NaN or an infinity at
// the first, a middle or the last of 300,000 values, in float32, bfloat16 and float16; a set flag stays set.
TEST(Devices, NoteNonfiniteOnCudaEqualsTheCpuReference) {
  if (!cuda_usable()) GTEST_SKIP() << kNoCuda;
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16, torch::kFloat16})
    for (const double bad : {0.0, std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::infinity()})
      for (const int64_t at : {int64_t(0), int64_t(150001), int64_t(299999)})
        for (const bool set : {false, true}) {
          auto x = torch::randn({300000}).to(dtype);
          if (bad != 0.0) x[at] = bad;
          const auto flag = torch::full({}, set, torch::kBool), on_cuda = flag.to(cuda());
          kernels::note_nonfinite(x, flag);
          kernels::note_nonfinite(x.to(cuda()), on_cuda);
          EXPECT_EQ(on_cuda.item<bool>(), flag.item<bool>()) << dtype << " " << bad << " at " << at << " " << set;
          EXPECT_EQ(flag.item<bool>(), set || bad != 0.0);
        }
}

// attend_cache's CUDA kernel against its CPU reference at GPT-XL's head shape (20 heads of 64, 576 of 640 slots)
// and at the embedded model's (Dh 32), with grouped heads: AR steps over rows of different lengths, a chain of
// 5 after each row's keys, and a tree of 40 nodes whose queries see the prefix and a random set of nodes.
// Tolerances: float32 1e-5, bfloat16 2e-2 (relative and absolute), the kernel check's.
TEST(Devices, AttendCacheOnCudaEqualsTheCpuReference) {
  if (!cuda_usable()) GTEST_SKIP() << kNoCuda;
  torch::NoGradGuard no_grad;
  torch::manual_seed(3);
  struct Shape {
    int64_t H, Hkv, Dh;
  };
  for (const auto& shape : {Shape{20, 20, 64}, Shape{4, 2, 32}})
    for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
      const int64_t B = 3, S = 640, keys = 576;
      const auto kc = torch::randn({B, shape.Hkv, S, shape.Dh}).to(dtype), vc = torch::randn_like(kc);
      const auto lengths = torch::tensor({576, 300, 17}, torch::kInt64).view({B, 1, 1, 1});
      const auto key = torch::arange(keys, torch::kInt64).view({1, 1, 1, keys});
      for (const int64_t T : {int64_t(1), int64_t(5), int64_t(40)}) {
        const auto query = torch::arange(T, torch::kInt64).view({1, 1, T, 1});
        auto mask = key < lengths - T + query + 1;  // each row's keys, then its block causally
        if (T == 40)
          mask = (key < lengths - T) | ((key >= lengths - T) & (key < lengths) & (torch::rand({B, 1, T, keys}) < 0.3)) |
                 (key == lengths - T + query);  // a tree: the prefix, some nodes, itself
        const auto q = torch::randn({B, shape.H, T, shape.Dh}).to(dtype);
        const auto gpu =
            kernels::attend_cache(q.to(cuda()), kc.to(cuda()), vc.to(cuda()), keys, mask.to(cuda()), false);
        const auto ref = kernels::attend_cache(q, kc, vc, keys, mask, false);
        const double tolerance = dtype == torch::kFloat32 ? 1e-5 : 2e-2;
        const double worst = (gpu.cpu().to(torch::kFloat32) - ref.to(torch::kFloat32)).abs().max().item<double>();
        std::cout << "attend_cache on CUDA, H " << shape.H << " Dh " << shape.Dh << " " << dtype << " T " << T
                  << ": max difference " << worst << "\n";
        EXPECT_TRUE(torch::allclose(gpu.cpu().to(torch::kFloat32), ref.to(torch::kFloat32), tolerance, tolerance))
            << dtype << " T " << T << " Dh " << shape.Dh << ": " << worst;
      }
    }
}

// linear's CUDA kernel for a few rows against the CPU reference at GPT-XL's shapes (the merged q/k/v and w1/w3
// projections, the output projection, w2 and the 16384-code head) for 1 to 4 rows, and 5 and 16 rows (cuBLAS).
// Tolerances: float32 1e-4 (the sums of 3456 products in another order), bfloat16 2e-2.
TEST(Devices, LinearRowsOnCudaEqualTheCpuReference) {
  if (!cuda_usable()) GTEST_SKIP() << kNoCuda;
  torch::NoGradGuard no_grad;
  torch::manual_seed(4);
  struct Shape {
    int64_t N, K;
  };
  for (const auto& shape :
       {Shape{3840, 1280}, Shape{6912, 1280}, Shape{1280, 1280}, Shape{1280, 3456}, Shape{16384, 1280}})
    for (const auto dtype : {torch::kFloat32, torch::kBFloat16})
      for (const int64_t rows : {int64_t(1), int64_t(2), int64_t(3), int64_t(4), int64_t(5), int64_t(16)}) {
        const auto w = (torch::randn({shape.N, shape.K}) / std::sqrt(double(shape.K))).to(dtype);
        const auto x = torch::randn({rows, 1, shape.K}).to(dtype);
        const auto gpu = kernels::linear(x.to(cuda()), w.to(cuda())).cpu().to(torch::kFloat32);
        const auto ref = kernels::linear(x, w).to(torch::kFloat32);
        const double tolerance = dtype == torch::kFloat32 ? 1e-4 : 2e-2;
        EXPECT_EQ(gpu.sizes(), ref.sizes());
        EXPECT_TRUE(torch::allclose(gpu, ref, tolerance, tolerance))
            << dtype << " " << rows << " x " << shape.K << " -> " << shape.N << ": max difference "
            << (gpu - ref).abs().max().item<double>();
      }
}

// SwiGLU's middle in one kernel (linear_silu_mul) gives the bits of its two CUDA operators, linear then
// silu_mul, at GPT-XL's w1|w3 shape (F 3584) and an odd one, for 1 to 4 rows, and 5 rows (their fallback);
// and it is near the CPU reference: float32 1e-4, bfloat16 3e-2 (the gate multiplies two products that may
// each round to a neighbouring bfloat16).
TEST(Devices, LinearSiluMulOnCudaEqualsLinearThenSiluMul) {
  if (!cuda_usable()) GTEST_SKIP() << kNoCuda;
  torch::NoGradGuard no_grad;
  torch::manual_seed(6);
  struct Shape {
    int64_t F, K;
  };
  for (const auto& shape : {Shape{3584, 1280}, Shape{35, 96}})
    for (const auto dtype : {torch::kFloat32, torch::kBFloat16})
      for (const int64_t rows : {int64_t(1), int64_t(2), int64_t(3), int64_t(4), int64_t(5)}) {
        const auto w = (torch::randn({2 * shape.F, shape.K}) / std::sqrt(double(shape.K))).to(dtype).to(cuda());
        const auto x = torch::randn({rows, 1, shape.K}).to(dtype).to(cuda());
        const auto fused = kernels::linear_silu_mul(x, w);
        const auto two = kernels::silu_mul(kernels::linear(x, w));
        EXPECT_TRUE(torch::equal(fused, two)) << dtype << " " << rows << " x " << shape.K << " -> " << shape.F
                                              << ": max difference " << (fused - two).abs().max().item<double>();
        const auto ref = kernels::linear_silu_mul(x.cpu(), w.cpu()).to(torch::kFloat32);
        const double tolerance = dtype == torch::kFloat32 ? 1e-4 : 3e-2;
        EXPECT_TRUE(torch::allclose(fused.cpu().to(torch::kFloat32), ref, tolerance, tolerance))
            << dtype << " " << rows << ": max difference "
            << (fused.cpu().to(torch::kFloat32) - ref).abs().max().item<double>();
      }
}

// The keyed uniforms drawn inside the CUDA kernel have the host generator's bits, and so does the tensor
// generator that replaces it where the kernels are not used.
TEST(Devices, KeyedUniformsOnCudaEqualTheHostGenerator) {
  if (!cuda_usable()) GTEST_SKIP() << kNoCuda;
  torch::manual_seed(5);
  const auto ids =
      torch::tensor({int64_t(0), int64_t(3), (int64_t(1) << 40) + 9, (int64_t(1) << 62) + 1}, torch::kInt64);
  const auto positions = torch::randint(0, int64_t(1) << 31, {4, 50}, torch::kInt64);
  const auto draws = torch::randint(0, 1 << 24, {4, 50}, torch::kInt64);
  for (const uint64_t seed : {uint64_t(0), (uint64_t(1) << 63) + 77}) {
    const auto host = uniforms_at(seed, ids, positions, Purpose::kAccept, draws);
    EXPECT_TRUE(torch::equal(
        uniforms_at(seed, ids.to(cuda()), positions.to(cuda()), Purpose::kAccept, draws.to(cuda())).cpu(), host));
    EXPECT_TRUE(torch::equal(
        philox_uniforms(seed, ids.to(cuda()), positions.to(cuda()), Purpose::kAccept, draws.to(cuda())).cpu(), host));
  }
}

TEST(Devices, SamplerOnCudaPicksTheSameTokensAsOnCpu) {
  if (!cuda_usable()) GTEST_SKIP() << kNoCuda;
  torch::manual_seed(3);
  const auto logits = torch::randn({64, 100}) * 3;
  const auto u = torch::rand({64}, torch::kFloat64);
  for (double temperature : {0.0, 0.7, 1.0}) {
    SamplingParams p;
    p.temperature = temperature;
    p.top_k = 50;
    p.top_p = 0.9;
    const auto cpu = sample_from_probs(target_probs(logits, p), u);
    const auto gpu = sample_from_probs(target_probs(logits.to(cuda()), p), u.to(cuda())).cpu();
    EXPECT_TRUE(torch::equal(cpu, gpu)) << "temperature " << temperature;
  }
}

// fp32 kernels differ between CPU and GPU in their last bits, which greedy decoding turns into a different
// token only at a near-tie of the top two logits: none on these samples.
TEST(Devices, GreedyTokensOnCudaEqualCpuForArAndEveryExactDecoder) {
  if (!cuda_usable()) GTEST_SKIP() << kNoCuda;
  const Embedded cpu(torch::kCPU, "fp32"), gpu(cuda(), "fp32");
  for (const auto& name : kExactDecoders)
    EXPECT_TRUE(torch::equal(greedy_tokens(cpu, name, 4), greedy_tokens(gpu, name, 4))) << name;
}

TEST(Devices, LosslessDecodersSampleTheExactTargetDistributionOnCuda) {
  if (!cuda_usable()) GTEST_SKIP() << kNoCuda;
  const int64_t V = 8;
  const auto p = test::guided_sampling(1.0);
  auto target = test::tiny_gpt(3, V), drafter = test::tiny_gpt(4, V);
  auto head = test::tiny_eagle_drafter(target->config(), 4);
  target->to(cuda());
  drafter->to(cuda());
  head->to(cuda());
  SdDecoder sd(target, drafter, p, 3, AcceptanceParams{}, nullptr);
  EXPECT_TRUE(test::first_token_fit(sd, target, p, V, "SD on CUDA").passes());
  Eagle2Decoder eagle2("eagle2", target, head, p, TreeShape{2, 3, 8}, AcceptanceParams{}, nullptr);
  EXPECT_TRUE(test::first_token_fit(eagle2, target, p, V, "EAGLE-2 on CUDA").passes());
  SjdDecoder sjd(target, p, 4);
  EXPECT_TRUE(test::first_token_fit(sjd, target, p, V, "SJD on CUDA").passes());
}

// Data-parallel training's gradient sums among GPUs (scheduler/nccl_data_parallel.h), in a world of one (one
// GPU here; NCCL refuses two ranks on one GPU, so the multi-rank sums are MPI's, tested in mpi_train.sh): the
// communicator is made over a real NCCL, and sums on the GPU and on the host leave the tensors as they were.
TEST(Devices, NcclGradientSumsRunOnTheGpu) {
  if (!cuda_usable()) GTEST_SKIP() << kNoCuda;
  if (!built_with_nccl()) GTEST_SKIP() << "built without NCCL (the torch package has no nvidia.nccl)";
  MpiSession session;
  auto ranks = make_data_parallel(session, cuda());
  ASSERT_EQ(ranks->size(), 1);
  auto on_gpu = torch::arange(3000, torch::TensorOptions().dtype(torch::kFloat32).device(cuda()));
  const auto expected = on_gpu.cpu().clone();
  ranks->sum(on_gpu);
  EXPECT_TRUE(torch::equal(on_gpu.cpu(), expected));
  auto on_host = expected.clone();
  ranks->sum(on_host);
  EXPECT_TRUE(torch::equal(on_host, expected));
}

}  // namespace vispec
