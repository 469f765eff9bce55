// vispec::grow_level: its schema, its checks and the arguments of kernels/grow_level_body.h made from its tensors,
// the CPU reference (the body with one CPU thread playing every lane in turn, rows over LibTorch's threads), the
// CUDA binding and kernel check (kernels/README.md), and its C++ call.
#include "kernels/grow_level.h"

#include "core/check.h"
#include "kernels/cpu_team.h"
#include "kernels/grow_level_body.h"
#include "kernels/operator.h"

namespace vispec::kernels {

namespace {

// The growth's inputs made contiguous and the body's arguments pointing at them and at the buffers.
struct GrowLevelCall {
  int64_t B = 0;
  torch::Tensor lp, idx, own;  // contiguous
  growth::Args<float> f32;     // lp float32
  growth::Args<double> f64;    // lp float64
  bool double_lp = false;
};

// Checks grow_level's inputs and buffers (the buffers contiguous: they are written in place) and points the
// body's arguments at them.
GrowLevelCall prepare_grow_level(const torch::Tensor& lp, const torch::Tensor& idx, const torch::Tensor& own,
                                 const torch::Tensor& score, const torch::Tensor& cand_token,
                                 const torch::Tensor& cand_parent, const torch::Tensor& cand_score,
                                 const torch::Tensor& frontier, const torch::Tensor& tokens,
                                 const torch::Tensor& parent_slot, const torch::Tensor& mask, int64_t level) {
  VISPEC_ASSERT(score.dim() == 2 && cand_token.dim() == 2 && frontier.dim() == 2 && score.size(1) >= 1,
                "grow_level: score ", score.sizes(), ", candidates ", cand_token.sizes(), ", frontier ",
                frontier.sizes());
  const int64_t B = score.size(0), K = score.size(1), C = cand_token.size(1), W = frontier.size(1), D = W / K - 1;
  VISPEC_ASSERT(K <= team::kLanes && W == K * (D + 1) && D >= 0 && C == K + D * K * K && level >= -1 && level < D,
                "grow_level: top_k ", K, " (at most ", team::kLanes, "), ", W, " frontier slots and ", C,
                " candidates (K (D + 1) and K + D K^2), level ", level);
  const auto device = score.device();
  auto check = [&](const torch::Tensor& t, const char* what, std::vector<int64_t> sizes, torch::ScalarType dtype,
                   bool written) {
    VISPEC_ASSERT(t.sizes() == torch::IntArrayRef(sizes) && t.scalar_type() == dtype && t.device() == device &&
                      (!written || t.is_contiguous()),
                  "grow_level: ", what, " is ", t.sizes(), " ", t.scalar_type(), " on ", t.device(), ", not ",
                  torch::IntArrayRef(sizes), " ", dtype, " on ", device, written ? ", contiguous" : "");
    return t.contiguous();
  };
  GrowLevelCall c;
  c.B = B;
  c.double_lp = lp.scalar_type() == torch::kFloat64;
  const auto lp_dtype = c.double_lp ? torch::kFloat64 : torch::kFloat32;
  std::vector<int64_t> level_shape{B, K};
  if (level >= 0) level_shape.push_back(K);
  c.lp = check(lp, "lp", level_shape, lp_dtype, false);
  c.idx = check(idx, "idx", level_shape, torch::kInt64, false);
  c.own = check(own, "own", {B, 3}, torch::kInt64, false);
  check(score, "score", {B, K}, torch::kFloat64, true);
  check(cand_token, "cand_token", {B, C}, torch::kInt64, true);
  check(cand_parent, "cand_parent", {B, C}, torch::kInt64, true);
  check(cand_score, "cand_score", {B, C}, torch::kFloat64, true);
  check(frontier, "frontier", {B, W}, torch::kInt64, true);
  check(tokens, "tokens", {B, W}, torch::kInt64, true);
  check(parent_slot, "parent_slot", {B, W}, torch::kInt64, true);
  check(mask, "mask", {B, W, W}, torch::kBool, true);
  auto point = [&](auto& a) {
    a.idx = c.idx.data_ptr<int64_t>(), a.own = c.own.data_ptr<int64_t>(), a.score = score.data_ptr<double>();
    a.cand_token = cand_token.data_ptr<int64_t>(), a.cand_parent = cand_parent.data_ptr<int64_t>();
    a.cand_score = cand_score.data_ptr<double>(), a.frontier = frontier.data_ptr<int64_t>();
    a.tokens = tokens.data_ptr<int64_t>(), a.parent_slot = parent_slot.data_ptr<int64_t>();
    a.mask = mask.data_ptr<bool>(), a.K = K, a.C = C, a.W = W, a.level = level;
  };
  point(c.f32);
  point(c.f64);
  if (c.double_lp) c.f64.lp = c.lp.data_ptr<double>();
  else c.f32.lp = c.lp.data_ptr<float>();
  return c;
}

void grow_level_cpu(const torch::Tensor& lp, const torch::Tensor& idx, const torch::Tensor& own,
                    const torch::Tensor& score, const torch::Tensor& cand_token, const torch::Tensor& cand_parent,
                    const torch::Tensor& cand_score, const torch::Tensor& frontier, const torch::Tensor& tokens,
                    const torch::Tensor& parent_slot, const torch::Tensor& mask, int64_t level) {
  const auto c = prepare_grow_level(lp, idx, own, score, cand_token, cand_parent, cand_score, frontier, tokens,
                                    parent_slot, mask, level);
  auto grow_rows = [&](const auto& args) {
    for_each_row_on_teams(c.B, [&](CpuTeam& team, int64_t b) { growth::grow_row(team, args, b); });
  };
  if (c.double_lp) grow_rows(c.f64);
  else grow_rows(c.f32);
}

}  // namespace

#ifdef VISPEC_CUDA_KERNELS
namespace cuda {

// kernels/grow_level.cu: one level, one block of team::kLanes threads per row.
int grow_level(const growth::Args<float>& args, int64_t B, CUstream_st* stream);
int grow_level(const growth::Args<double>& args, int64_t B, CUstream_st* stream);

namespace {

void grow_level_cuda(const torch::Tensor& lp, const torch::Tensor& idx, const torch::Tensor& own,
                     const torch::Tensor& score, const torch::Tensor& cand_token, const torch::Tensor& cand_parent,
                     const torch::Tensor& cand_score, const torch::Tensor& frontier, const torch::Tensor& tokens,
                     const torch::Tensor& parent_slot, const torch::Tensor& mask, int64_t level) {
  const c10::cuda::CUDAGuard guard(score.device());
  const auto c = prepare_grow_level(lp, idx, own, score, cand_token, cand_parent, cand_score, frontier, tokens,
                                    parent_slot, mask, level);
  const auto stream = stream_of(score);
  check_launch(c.double_lp ? grow_level(c.f64, c.B, stream) : grow_level(c.f32, c.B, stream), "grow_level");
}

// Two rows' trees grown by two levels (K 3: a root step, then levels 0 and 1), the second row narrower (top_k 2)
// and shallower (depth 1), one tie among the children: the same buffers as the CPU reference's.
std::string kernel_check_grow_level(const c10::Device& device, c10::ScalarType) {
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
    auto lp = check_pattern(shape, 0.2 + double(level), torch::kFloat32) - 2.0f;
    if (level == 0) lp.view({-1})[4].copy_(lp.view({-1})[5]);
    const auto idx = torch::arange(lp.numel(), torch::kInt64).view(shape) * 5 % 64;
    for (auto* b : {&gpu, &cpu}) {
      const auto d = (*b)[0].device();
      auto& v = *b;
      kernels::grow_level(lp.to(d), idx.to(d), own.to(d), v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], level);
    }
  }
  for (size_t i = 0; i < gpu.size(); ++i)
    if (!torch::equal(gpu[i].cpu(), cpu[i])) return "grow_level grew the trees otherwise";
  return "";
}

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(vispec, CUDA, m) { m.impl("grow_level", &cuda::grow_level_cuda); }
#endif

TORCH_LIBRARY_FRAGMENT(vispec, m) {
  m.def(
      "grow_level(Tensor lp, Tensor idx, Tensor own, Tensor(a!) score, Tensor(b!) cand_token, "
      "Tensor(c!) cand_parent, Tensor(d!) cand_score, Tensor(e!) frontier, Tensor(f!) tokens, "
      "Tensor(g!) parent_slot, Tensor(h!) mask, int level) -> ()");
}

TORCH_LIBRARY_IMPL(vispec, CPU, m) { m.impl("grow_level", &grow_level_cpu); }

VISPEC_KERNEL(grow_level, 1, &cuda::kernel_check_grow_level);

void grow_level(const at::Tensor& lp, const at::Tensor& idx, const at::Tensor& own, const at::Tensor& score,
                const at::Tensor& cand_token, const at::Tensor& cand_parent, const at::Tensor& cand_score,
                const at::Tensor& frontier, const at::Tensor& tokens, const at::Tensor& parent_slot,
                const at::Tensor& mask, int64_t level) {
  using Tensor = const at::Tensor&;
  static const auto op = operator_handle<void(Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor,
                                              Tensor, Tensor, int64_t)>("vispec::grow_level");
  op.call(lp, idx, own, score, cand_token, cand_parent, cand_score, frontier, tokens, parent_slot, mask, level);
}

}  // namespace vispec::kernels
