#include "kernels/kernel_check.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <limits>
#include <map>
#include <mutex>
#include <utility>

#include "kernels/fused_ops.h"

namespace vispec::kernels {

namespace {

constexpr const char* kFused = "fused-5";
constexpr const char* kComposite = "composite";

thread_local bool composite_only = false;

// Deterministic test inputs (no random generator is touched): a sine pattern of the given shape.
torch::Tensor pattern(std::vector<int64_t> shape, double phase, torch::ScalarType dtype) {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  return (torch::sin(torch::arange(n, torch::kFloat32) * 0.731 + phase) * 1.7).view(shape).to(dtype);
}

// Where the GPU's result a and the CPU reference b differ by more than a rounding of dtype allows: "" if nowhere.
std::string differs(const char* what, const torch::Tensor& a, const torch::Tensor& b, torch::ScalarType dtype) {
  const double tolerance = dtype == torch::kFloat32 ? 1e-5 : dtype == torch::kFloat16 ? 2e-3 : 2e-2;
  const auto gpu = a.to(torch::kCPU, torch::kFloat32), ref = b.to(torch::kFloat32);
  if (torch::allclose(gpu, ref, tolerance, tolerance)) return "";
  return std::string(what) + " differs by " + std::to_string((gpu - ref).abs().max().item<float>());
}

#ifdef VISPEC_CUDA_KERNELS
// The tree walk on a small tree (0 -> 1, 2; 1 -> 3; 3 -> 4) in two rows, one whose uniforms accept and one
// whose uniforms reject, under each rule, sampling and greedy: the same paths and tokens as the CPU reference.
std::string check_tree_walk(const c10::Device& device) {
  const int64_t B = 2, T = 5, C = 2, V = 64, L = 3;
  const auto token = torch::tensor({0, 7, 11, 3, 5}, torch::kInt64).repeat({B, 1});
  const auto depth = torch::tensor({0, 1, 1, 2, 3}, torch::kInt64).repeat({B, 1});
  const auto children =
      torch::tensor({1, 2, 3, -1, -1, -1, 4, -1, -1, -1}, torch::kInt64).view({1, T, C}).repeat({B, 1, 1});
  const auto p = torch::softmax(pattern({B, T, V}, 0.5, torch::kFloat32) * 3, -1);
  const auto node_q = torch::softmax(pattern({B, T, V}, 1.1, torch::kFloat32) * 3, -1);
  const auto q_slot = torch::arange(T, torch::kInt64).repeat({B, 1});
  const auto target = p.argmax(-1);
  const auto neighbours = (torch::arange(V, torch::kInt64).view({V, 1}) + torch::arange(1, 9, torch::kInt64)) % V;
  const auto weights = torch::tensor({0.7, 1.2, 0.9, 0.5, 1.1, 0.8}, torch::kFloat64).view({B, L});
  const auto limit = torch::tensor({int64_t(4), int64_t(4)}, torch::kInt64);
  const auto u_accept =
      torch::stack({torch::full({L, C}, 0.001, torch::kFloat64), torch::full({L, C}, 0.999, torch::kFloat64)});
  const auto u_resample = torch::tensor({0.3, 0.6, 0.1, 0.8, 0.45, 0.2, 0.9, 0.55}, torch::kFloat64).view({B, L + 1});
  const auto u_sample = 1.0 - u_resample;
  auto on = [&](const torch::Tensor& t, const c10::Device& d) { return std::optional<torch::Tensor>(t.to(d)); };
  for (int64_t rule = 0; rule <= 3; ++rule)
    for (int variant = 0; variant < 3; ++variant) {  // sampling, sampling with node_q, greedy
      const bool greedy = variant == 2, with_q = variant == 1, lantern = rule == 1 || rule == 2;
      auto walk = [&](const c10::Device& d) {
        return tree_walk(greedy ? std::nullopt : on(p, d), greedy ? on(target, d) : std::nullopt, token.to(d),
                         depth.to(d), children.to(d), with_q ? on(node_q, d) : std::nullopt,
                         with_q ? on(q_slot, d) : std::nullopt, lantern && !greedy ? on(neighbours, d) : std::nullopt,
                         rule == 3 ? on(weights, d) : std::nullopt, limit.to(d), on(u_accept, d), on(u_resample, d),
                         on(u_sample, d), L, rule, lantern && !greedy ? 8 : 0, 0.3, 2.0, false);
      };
      const auto gpu = walk(device), cpu = walk(torch::kCPU);
      const bool same = torch::equal(std::get<0>(gpu).cpu(), std::get<0>(cpu)) &&
                        torch::equal(std::get<1>(gpu).cpu(), std::get<1>(cpu)) &&
                        torch::equal(std::get<2>(gpu).cpu(), std::get<2>(cpu)) &&
                        torch::equal(std::get<3>(gpu).cpu(), std::get<3>(cpu)) &&
                        torch::equal(std::get<4>(gpu).cpu(), std::get<4>(cpu));
      if (!same)
        return "tree_walk (rule " + std::to_string(rule) +
               (greedy   ? ", greedy"
                : with_q ? ", with q"
                         : "") +
               ") walked otherwise";
    }
  return "";
}

// The tree layout of two rows' candidates (K 2, depth 2: 10 each) with a tie, a filtered candidate and a cut
// parent: the same kept candidates, tables and mask as the CPU reference.
std::string check_tree_layout(const c10::Device& device) {
  const int64_t K = 2, D = 2, C = K + D * K * K, T = 7;
  const double none = -std::numeric_limits<double>::infinity();
  const auto score = torch::tensor({-0.1, -0.3, -0.2, -0.9,  -0.4, -0.4, -0.5, -0.6, -0.7, -1.0,  //
                                    -0.2, none, -0.3, -0.25, -0.6, -0.8, -0.3, -0.9, -0.4, -0.5},
                                   torch::kFloat64)
                         .view({2, C});
  const auto parent = torch::tensor({-1, -1, 0, 0, 1, 1, 2, 2, 4, 4}, torch::kInt64).repeat({2, 1});
  const auto token = torch::arange(2 * C, torch::kInt64).view({2, C}) * 7 % 64;
  const auto nodes = torch::tensor({int64_t(6), int64_t(5)}, torch::kInt64);
  const auto roots = torch::tensor({int64_t(3), int64_t(9)}, torch::kInt64);
  const auto root_index = torch::tensor({int64_t(2), int64_t(14)}, torch::kInt64);
  const auto gpu = tree_layout(score.to(device), parent.to(device), token.to(device), nodes.to(device),
                               roots.to(device), root_index.to(device), K, D, T, 16);
  const auto cpu = tree_layout(score, parent, token, nodes, roots, root_index, K, D, T, 16);
  const bool same = torch::equal(std::get<0>(gpu).cpu(), std::get<0>(cpu)) &&
                    torch::equal(std::get<1>(gpu).cpu(), std::get<1>(cpu)) &&
                    torch::equal(std::get<2>(gpu).cpu(), std::get<2>(cpu)) &&
                    torch::equal(std::get<3>(gpu).cpu(), std::get<3>(cpu)) &&
                    torch::equal(std::get<4>(gpu).cpu(), std::get<4>(cpu)) &&
                    torch::equal(std::get<5>(gpu).cpu(), std::get<5>(cpu));
  return same ? "" : "tree_layout laid the trees out otherwise";
}

// Two rows' trees grown by two levels (K 3: a root step, then levels 0 and 1), the second row narrower (top_k 2)
// and shallower (depth 1), one tie among the children: the same buffers as the CPU reference's.
std::string check_grow_level(const c10::Device& device) {
  const int64_t B = 2, K = 3, D = 2, C = K + D * K * K, W = K * (D + 1);
  const auto own =
      torch::tensor({int64_t(3), int64_t(2), int64_t(8), int64_t(2), int64_t(1), int64_t(5)}, torch::kInt64)
          .view({B, 3});
  auto buffers = [&](const c10::Device& d) {
    const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(d);
    return std::vector<torch::Tensor>{torch::empty({B, K}, i64.dtype(torch::kFloat64)),
                                      torch::empty({B, C}, i64),
                                      torch::empty({B, C}, i64),
                                      torch::empty({B, C}, i64.dtype(torch::kFloat64)),
                                      torch::empty({B, W}, i64),
                                      torch::empty({B, W}, i64),
                                      torch::empty({B, W}, i64),
                                      torch::empty({B, W, W}, i64.dtype(torch::kBool))};
  };
  auto gpu = buffers(device), cpu = buffers(torch::kCPU);
  for (int64_t level = -1; level < D; ++level) {
    const std::vector<int64_t> shape = level < 0 ? std::vector<int64_t>{B, K} : std::vector<int64_t>{B, K, K};
    auto lp = pattern(shape, 0.2 + double(level), torch::kFloat32) - 2.0f;
    if (level == 0) lp.view({-1})[4].copy_(lp.view({-1})[5]);
    const auto idx = torch::arange(lp.numel(), torch::kInt64).view(shape) * 5 % 64;
    for (auto* b : {&gpu, &cpu}) {
      const auto d = (*b)[0].device();
      auto& v = *b;
      grow_level(lp.to(d), idx.to(d), own.to(d), v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], level);
    }
  }
  for (size_t i = 0; i < gpu.size(); ++i)
    if (!torch::equal(gpu[i].cpu(), cpu[i])) return "grow_level grew the trees otherwise";
  return "";
}

// EAGLE-1's draws without replacement: 3 x 2 rows of q (one with a single code of mass, so its later draws find
// nothing left), 4 draws each: the same tokens and probabilities, bit for bit (the same body on both sides).
std::string check_draws(const c10::Device& device) {
  auto q = torch::softmax(pattern({3, 2, 40}, 0.7, torch::kFloat32) * 4, -1);
  q[1][1].zero_();
  q[1][1][17] = 1.0f;
  const auto u = (pattern({3, 2, 4}, 1.9, torch::kFloat32).to(torch::kFloat64) + 1.7) / 3.4;
  const auto gpu = draw_without_replacement(q.to(device), u.to(device));
  const auto cpu = draw_without_replacement(q, u);
  const bool same =
      torch::equal(std::get<0>(gpu).cpu(), std::get<0>(cpu)) && torch::equal(std::get<1>(gpu).cpu(), std::get<1>(cpu));
  return same ? "" : "draw_without_replacement drew otherwise";
}
#endif

// Every CUDA kernel on small inputs beside its CPU reference: "" when all agree, else what went wrong.
std::string check_cuda(const c10::Device& device, torch::ScalarType dtype) {
#ifndef VISPEC_CUDA_KERNELS
  (void)device, (void)dtype;
  return "this build has no CUDA kernels (nvcc did not compile kernels/fused_ops.cu)";
#else
  try {
    torch::NoGradGuard no_grad;
    std::string problem;
    auto both = [&](const char* what, const torch::Tensor& gpu, const torch::Tensor& ref) {
      if (problem.empty()) problem = differs(what, gpu, ref, dtype);
    };
    const auto x = pattern({3, 5, 96}, 0.1, dtype), delta = pattern({3, 5, 96}, 1.3, dtype);
    const auto weight = pattern({96}, 2.2, dtype);
    both("rms_norm", rms_norm(x.to(device), weight.to(device), 1e-5), rms_norm(x, weight, 1e-5));
    const auto [sum, normed] = add_rms_norm(x.to(device), delta.to(device), weight.to(device), 1e-6);
    const auto [sum_ref, normed_ref] = add_rms_norm(x, delta, weight, 1e-6);
    both("add_rms_norm's sum", sum, sum_ref);
    both("add_rms_norm", normed, normed_ref);
    both("silu_mul", silu_mul(x.to(device)), silu_mul(x));
    // Widths of whole 16-byte vectors per lane take the warp-per-row RMSNorm (GPT-XL's 1280 among them).
    for (const int64_t width : {int64_t(512), int64_t(1280)}) {
      const auto xw = pattern({3, 2, width}, 0.3, dtype), dw = pattern({3, 2, width}, 1.1, dtype);
      const auto ww = pattern({width}, 2.6, dtype);
      both("rms_norm (a warp per row)", rms_norm(xw.to(device), ww.to(device), 1e-5), rms_norm(xw, ww, 1e-5));
      const auto [sum_w, normed_w] = add_rms_norm(xw.to(device), dw.to(device), ww.to(device), 1e-6);
      const auto [sum_w_ref, normed_w_ref] = add_rms_norm(xw, dw, ww, 1e-6);
      both("add_rms_norm's sum (a warp per row)", sum_w, sum_w_ref);
      both("add_rms_norm (a warp per row)", normed_w, normed_w_ref);
    }
    const int64_t B = 2, T = 3, H = 4, Hkv = 2, Dh = 16, S = 8;
    const auto qkv = pattern({B, T, (H + 2 * Hkv) * Dh}, 0.4, dtype);
    const auto angles = pattern({B, T, Dh / 2}, 0.9, torch::kFloat32);
    const auto rope = torch::stack({torch::cos(angles), torch::sin(angles)}, -1);
    const auto slots = torch::tensor({1, 4, 6, 0, 2, 7}, torch::kInt64).view({B, T});
    for (const bool half_split : {false, true}) {
      auto k = torch::zeros({B, Hkv, S, Dh}, dtype), v = torch::zeros_like(k);
      auto kg = k.to(device), vg = v.to(device);
      both("rope_write_kv's q",
           rope_write_kv(qkv.to(device), rope.to(device), kg, vg, slots.to(device), H, Hkv, half_split),
           rope_write_kv(qkv, rope, k, v, slots, H, Hkv, half_split));
      both("rope_write_kv's keys", kg, k);
      both("rope_write_kv's values", vg, v);
    }
    // A linear layer over 1, 2 and 4 rows (the kernel's, with odd columns) and 5 (cuBLAS's).
    const auto w = pattern({70, 96}, 0.8, dtype);
    for (const int64_t rows : {int64_t(1), int64_t(2), int64_t(4), int64_t(5)}) {
      const auto xs = pattern({rows, 96}, 1.9, dtype);
      both("linear", kernels::linear(xs.to(device), w.to(device)), kernels::linear(xs, w));
      // SwiGLU's fused kernel is held to the two operators it replaces on the same device, bit for bit (its
      // reference, silu_mul(linear) on the CPU, is checked through them: a gate multiplies two products, each
      // within its tolerance, so their product may not be).
      const auto fused = linear_silu_mul(xs.to(device), w.to(device));
      if (problem.empty() && !torch::equal(fused, silu_mul(kernels::linear(xs.to(device), w.to(device)))))
        problem = "linear_silu_mul's kernel differs from linear then silu_mul";
    }
    // Attention over a cache: two head widths, grouped heads, 70 of 80 slots (three chunks of 32 keys, the last
    // partial); masks per row and query (a row whose middle chunk is refused whole: skipped unread), one shared
    // by the rows, and none (every key).
    for (const int64_t width : {int64_t(32), int64_t(64)}) {
      const int64_t keys = 70, slots = 80;
      const auto q = pattern({B, H, T, width}, 0.6, dtype);
      const auto kc = pattern({B, Hkv, slots, width}, 1.7, dtype), vc = pattern({B, Hkv, slots, width}, 2.9, dtype);
      const auto key = torch::arange(keys, torch::kInt64).view({1, 1, 1, keys});
      const auto query = torch::arange(T, torch::kInt64).view({1, 1, T, 1});
      const auto row0 = key <= query + 60;                                 // a causal chain after 60 keys
      const auto row1 = (key < 10) | ((key >= 64) & (key <= query + 64));  // keys 10..63 refused
      const auto per_row = torch::cat({row0, row1}, 0);
      for (const auto& mask : {std::optional<torch::Tensor>(per_row), std::optional<torch::Tensor>(row0),
                               std::optional<torch::Tensor>()}) {
        const auto gpu = attend_cache(q.to(device), kc.to(device), vc.to(device), keys,
                                      mask ? std::optional<torch::Tensor>(mask->to(device)) : std::nullopt, false);
        both("attend_cache", gpu, attend_cache(q, kc, vc, keys, mask, false));
      }
    }
    // The sampler: tokens must be the same (the test rows' uniforms sit far from any CDF boundary's rounding).
    const auto logits = pattern({4, 300}, 0.3, torch::kFloat32) * 3;
    const auto u = torch::tensor({0.05, 0.37, 0.61, 0.93}, torch::kFloat64);
    struct Chain {
      double temperature;
      int64_t top_k;
      double top_p;
    };
    for (const auto& c :
         {Chain{0.0, 0, 1.0}, Chain{1.0, 0, 1.0}, Chain{0.7, 40, 1.0}, Chain{1.0, 0, 0.8}, Chain{1.3, 100, 0.9}}) {
      const auto flag = torch::zeros({}, torch::kBool);
      const auto gpu = sample_next(logits.to(device), u.to(device), c.temperature, c.top_k, c.top_p, flag.to(device));
      const auto ref = sample_next(logits, u, c.temperature, c.top_k, c.top_p, flag);
      if (problem.empty() && !torch::equal(gpu.cpu(), ref))
        problem = "sample_next (temperature " + std::to_string(c.temperature) + ", top_k " + std::to_string(c.top_k) +
                  ", top_p " + std::to_string(c.top_p) + ") drew other tokens";
    }
    // Guidance: the same bits (three float32 operations, rounded once each on both sides).
    const auto pair = pattern({2, 3, 70}, 0.2, dtype) * 4;
    if (problem.empty() && !torch::equal(cfg_mix(pair.to(device), 2.5).cpu(), cfg_mix(pair, 2.5)))
      problem = "cfg_mix mixed other logits";
    // The non-finite watch: values all finite, one NaN, one infinity; and a flag already set stays set.
    for (int bad = 0; bad < 4; ++bad) {
      const auto x = pattern({3, 700}, 0.4, dtype);
      if (bad == 1) x[1][333].fill_(std::numeric_limits<double>::quiet_NaN());
      if (bad == 2) x[2][699].fill_(-std::numeric_limits<double>::infinity());
      const auto flag = torch::full({}, bad == 3, torch::kBool), on_device = flag.to(device);
      note_nonfinite(x, flag);
      note_nonfinite(x.to(device), on_device);
      if (problem.empty() && !torch::equal(on_device.cpu(), flag)) problem = "note_nonfinite set another flag";
    }
    // The keyed uniforms: the same bits (integer arithmetic, then one exact conversion).
    const auto ids = torch::tensor({int64_t(0), int64_t(7), (int64_t(1) << 40) + 3}, torch::kInt64);
    const auto positions = torch::arange(12, torch::kInt64).view({3, 4}) * 977;
    const auto draws = positions.remainder(5);
    for (const auto& d : {std::optional<torch::Tensor>(), std::optional<torch::Tensor>(draws)}) {
      const auto gpu = keyed_uniforms(ids.to(device), positions.to(device),
                                      d ? std::optional<torch::Tensor>(d->to(device)) : std::nullopt, -5, 2);
      if (problem.empty() && !torch::equal(gpu.cpu(), keyed_uniforms(ids, positions, d, -5, 2)))
        problem = "keyed_uniforms drew other numbers";
    }
    if (problem.empty()) problem = check_tree_walk(device);
    if (problem.empty()) problem = check_tree_layout(device);
    if (problem.empty()) problem = check_grow_level(device);
    if (problem.empty()) problem = check_draws(device);
    return problem;
  } catch (const std::exception& e) {
    const std::string what = e.what();
    return what.substr(0, what.find('\n'));
  }
#endif
}

}  // namespace

std::string kernel_set(const c10::Device& device, c10::ScalarType dtype) {
  if (device.is_cpu()) return kFused;
  const bool supported = dtype == torch::kFloat32 || dtype == torch::kBFloat16 || dtype == torch::kFloat16;
  if (!device.is_cuda() || !supported) return kComposite;
  static std::mutex mutex;
  static std::map<std::pair<int, int>, bool> agreed;  // (device index, dtype) -> the kernels passed
  const std::lock_guard<std::mutex> lock(mutex);
  const std::pair<int, int> key{device.index(), int(dtype)};
  auto found = agreed.find(key);
  if (found == agreed.end()) {
    const auto problem = check_cuda(device, dtype);
    if (!problem.empty())
      spdlog::warn(
          "the fused CUDA kernels are not used on {} ({}): {}; the composite operators run instead "
          "(slower; the last bits of the outputs differ)",
          device.str(), c10::toString(dtype), problem);
    found = agreed.emplace(key, problem.empty()).first;
  }
  return found->second ? kFused : kComposite;
}

bool use_fused(const c10::Device& device, c10::ScalarType dtype) {
  if (composite_only || torch::GradMode::is_enabled()) return false;
  return device.is_cpu() || kernel_set(device, dtype) == kFused;
}

bool use_fused(const at::Tensor& x) { return use_fused(x.device(), x.scalar_type()); }

bool use_fused(const at::Tensor& x, const at::Tensor& operand) {
  return operand.scalar_type() == x.scalar_type() && use_fused(x);
}

CompositeOnly::CompositeOnly() : set_(composite_only) {}

}  // namespace vispec::kernels
