// The CUDA implementations of the fused operators: the CPU implementations' shape checks, then the kernel of
// kernels/fused_ops.cu on the current stream (so a CUDA graph being captured records it).
#include "kernels/fused_ops_cuda_impl.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "core/check.h"
#include "kernels/fused_ops_cpu.h"
#include "kernels/fused_ops_cuda.h"
#include "kernels/draws_op.h"
#include "kernels/tree_layout_op.h"
#include "kernels/tree_walk_op.h"

namespace vispec::kernels::cuda {

namespace {

Dtype dtype_of(const torch::Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kFloat32: return Dtype::f32;
    case torch::kBFloat16: return Dtype::bf16;
    case torch::kFloat16: return Dtype::f16;
    default: VISPEC_FAIL("the fused CUDA kernels take float32, bfloat16 or float16, not ", t.scalar_type());
  }
}

CUstream_st* stream_of(const torch::Tensor& t) { return c10::cuda::getCurrentCUDAStream(t.device().index()).stream(); }

// Whether a tensor's data starts on a 16-byte boundary (the 16-byte loads of attend_cache and linear).
bool aligned16(const torch::Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0; }

void check_launch(int error, const char* op) {
  VISPEC_CHECK(error == 0, "CUDA kernel vispec::", op, " failed to launch: ", error_string(error));
}

}  // namespace

torch::Tensor rms_norm_cuda(const torch::Tensor& x_in, const torch::Tensor& weight, double eps) {
  VISPEC_ASSERT(weight.dim() == 1 && weight.size(0) == x_in.size(-1) && weight.scalar_type() == x_in.scalar_type(),
                "rms_norm of ", x_in.sizes(), " by a weight of ", weight.sizes());
  const c10::cuda::CUDAGuard guard(x_in.device());
  const auto x = x_in.contiguous(), w = weight.contiguous();
  auto out = torch::empty_like(x);
  const int64_t D = x.size(-1);
  check_launch(rms_norm(dtype_of(x), x.data_ptr(), nullptr, w.data_ptr(), nullptr, out.data_ptr(),
                        x.numel() / std::max<int64_t>(1, D), D, float(eps), stream_of(x)),
               "rms_norm");
  return out;
}

std::tuple<torch::Tensor, torch::Tensor> add_rms_norm_cuda(const torch::Tensor& x_in, const torch::Tensor& delta_in,
                                                           const torch::Tensor& weight, double eps) {
  VISPEC_ASSERT(weight.dim() == 1 && weight.size(0) == x_in.size(-1) && weight.scalar_type() == x_in.scalar_type() &&
                    delta_in.sizes() == x_in.sizes() && delta_in.scalar_type() == x_in.scalar_type(),
                "add_rms_norm: x ", x_in.sizes(), ", delta ", delta_in.sizes(), ", weight ", weight.sizes());
  const c10::cuda::CUDAGuard guard(x_in.device());
  const auto x = x_in.contiguous(), delta = delta_in.contiguous(), w = weight.contiguous();
  auto sum = torch::empty_like(x), out = torch::empty_like(x);
  const int64_t D = x.size(-1);
  check_launch(rms_norm(dtype_of(x), x.data_ptr(), delta.data_ptr(), w.data_ptr(), sum.data_ptr(), out.data_ptr(),
                        x.numel() / std::max<int64_t>(1, D), D, float(eps), stream_of(x)),
               "add_rms_norm");
  return {sum, out};
}

torch::Tensor silu_mul_cuda(const torch::Tensor& gate_up_in) {
  VISPEC_ASSERT(gate_up_in.dim() >= 1 && gate_up_in.size(-1) % 2 == 0, "silu_mul of ", gate_up_in.sizes());
  const c10::cuda::CUDAGuard guard(gate_up_in.device());
  const auto gate_up = gate_up_in.contiguous();
  const int64_t F = gate_up.size(-1) / 2;
  auto sizes = gate_up.sizes().vec();
  sizes.back() = F;
  auto out = torch::empty(sizes, gate_up.options());
  check_launch(silu_mul(dtype_of(gate_up), gate_up.data_ptr(), out.data_ptr(), out.numel() / std::max<int64_t>(1, F), F,
                        stream_of(gate_up)),
               "silu_mul");
  return out;
}

torch::Tensor rope_write_kv_cuda(const torch::Tensor& qkv_in, const torch::Tensor& rope_in,
                                 const torch::Tensor& k_cache, const torch::Tensor& v_cache,
                                 const torch::Tensor& slots_in, int64_t n_head, int64_t n_kv_head, bool half_split) {
  cpu::check_rope_write_kv(qkv_in, rope_in, k_cache, v_cache, slots_in, n_head, n_kv_head);
  const c10::cuda::CUDAGuard guard(qkv_in.device());
  const auto qkv = qkv_in.contiguous(), rope = rope_in.contiguous(), slots = slots_in.contiguous();
  const int64_t B = qkv.size(0), T = qkv.size(1), S = k_cache.size(2), Dh = k_cache.size(3);
  auto q = torch::empty({B, n_head, T, Dh}, qkv.options());
  check_launch(rope_write_kv(dtype_of(qkv), qkv.data_ptr(), rope.data_ptr<float>(), slots.data_ptr<int64_t>(),
                             k_cache.data_ptr(), v_cache.data_ptr(), q.data_ptr(), B, T, n_head, n_kv_head, Dh, S,
                             half_split, stream_of(qkv)),
               "rope_write_kv");
  return q;
}

torch::Tensor sample_next_cuda(const torch::Tensor& logits_in, const torch::Tensor& u_in, double temperature,
                               int64_t top_k, double top_p, const torch::Tensor& nonfinite) {
  cpu::check_sample_next(logits_in, u_in, nonfinite);
  VISPEC_ASSERT(nonfinite.device() == logits_in.device() && u_in.device() == logits_in.device(),
                "sample_next: logits, uniforms and flag on one device");
  const c10::cuda::CUDAGuard guard(logits_in.device());
  const auto logits = logits_in.contiguous(), u = u_in.contiguous();
  auto tokens = torch::empty({logits.size(0)}, logits.options().dtype(torch::kInt64));
  check_launch(sample_next(logits.data_ptr<float>(), u.data_ptr<double>(), tokens.data_ptr<int64_t>(),
                           nonfinite.data_ptr<bool>(), logits.size(0), logits.size(1), temperature, top_k, top_p,
                           stream_of(logits)),
               "sample_next");
  return tokens;
}

namespace {

// Whether the few-rows kernels of kernels/linear_rows.cu take x [..., K] by weight [N, K]; M: x's rows.
bool rows_kernel_applies(const torch::Tensor& x, const torch::Tensor& weight, int64_t M) {
  return weight.scalar_type() == x.scalar_type() && weight.device() == x.device() && weight.is_contiguous() &&
         aligned16(weight) && linear_rows_supports(M, weight.size(1), int(x.element_size()));
}

// x contiguous and 16-byte aligned, and an output of x's leading sizes and `width` columns.
std::pair<torch::Tensor, torch::Tensor> rows_operands(const torch::Tensor& x_in, int64_t width) {
  auto x = x_in.contiguous();
  if (!aligned16(x)) x = x.clone();  // a fresh allocation is aligned
  auto sizes = x_in.sizes().vec();
  sizes.back() = width;
  return {x, torch::empty(sizes, x.options())};
}

}  // namespace

torch::Tensor linear_cuda(const torch::Tensor& x_in, const torch::Tensor& weight) {
  VISPEC_ASSERT(x_in.dim() >= 1 && weight.dim() == 2 && weight.size(1) == x_in.size(-1), "linear of ", x_in.sizes(),
                " by a weight of ", weight.sizes());
  const int64_t K = weight.size(1), N = weight.size(0), M = K > 0 ? x_in.numel() / K : 0;
  if (!rows_kernel_applies(x_in, weight, M)) return at::linear(x_in, weight);
  const c10::cuda::CUDAGuard guard(x_in.device());
  const auto [x, y] = rows_operands(x_in, N);
  check_launch(linear_rows(dtype_of(x), x.data_ptr(), weight.data_ptr(), y.data_ptr(), M, N, K, stream_of(x)),
               "linear");
  return y;
}

torch::Tensor linear_silu_mul_cuda(const torch::Tensor& x_in, const torch::Tensor& weight) {
  VISPEC_ASSERT(x_in.dim() >= 1 && weight.dim() == 2 && weight.size(1) == x_in.size(-1) && weight.size(0) % 2 == 0,
                "linear_silu_mul of ", x_in.sizes(), " by a weight of ", weight.sizes());
  const int64_t K = weight.size(1), F = weight.size(0) / 2, M = K > 0 ? x_in.numel() / K : 0;
  if (!rows_kernel_applies(x_in, weight, M)) return silu_mul_cuda(linear_cuda(x_in, weight));
  const c10::cuda::CUDAGuard guard(x_in.device());
  const auto [x, y] = rows_operands(x_in, F);
  check_launch(linear_silu_mul_rows(dtype_of(x), x.data_ptr(), weight.data_ptr(), y.data_ptr(), M, F, K, stream_of(x)),
               "linear_silu_mul");
  return y;
}

torch::Tensor attend_cache_cuda(const torch::Tensor& q_in, const torch::Tensor& k_cache, const torch::Tensor& v_cache,
                                int64_t keys, const std::optional<torch::Tensor>& mask, bool causal) {
  VISPEC_ASSERT(q_in.dim() == 4 && k_cache.dim() == 4 && v_cache.sizes() == k_cache.sizes() && keys >= 0 &&
                    keys <= k_cache.size(2) && k_cache.size(3) == q_in.size(3) && k_cache.size(0) == q_in.size(0),
                "attend_cache: q ", q_in.sizes(), ", caches ", k_cache.sizes(), ", keys ", keys);
  const int64_t B = q_in.size(0), H = q_in.size(1), T = q_in.size(2), Dh = q_in.size(3), Hkv = k_cache.size(1);
  const auto beside_q = [&](const torch::Tensor& t) {
    return t.device() == q_in.device() && t.scalar_type() == q_in.scalar_type() && t.is_contiguous() && aligned16(t);
  };
  const bool kernel_applies = (mask || !causal) && attend_supports(Dh) && Hkv > 0 && H % Hkv == 0 &&
                              beside_q(k_cache) && beside_q(v_cache) &&
                              (!mask || (mask->scalar_type() == torch::kBool && mask->device() == q_in.device() &&
                                         mask->dim() == 4 && mask->size(1) == 1 && mask->size(2) == T &&
                                         mask->size(3) == keys && (mask->size(0) == 1 || mask->size(0) == B)));
  if (!kernel_applies) return cpu::attend_cache(q_in, k_cache, v_cache, keys, mask, causal);
  const c10::cuda::CUDAGuard guard(q_in.device());
  const auto q = q_in.contiguous();
  auto out = torch::empty({B, T, H * Dh}, q.options());
  AttendArgs args{q.data_ptr(),
                  k_cache.data_ptr(),
                  v_cache.data_ptr(),
                  nullptr,
                  out.data_ptr(),
                  B,
                  H,
                  Hkv,
                  T,
                  k_cache.size(2),
                  Dh,
                  keys,
                  0,
                  0,
                  0,
                  float(1.0 / std::sqrt(double(Dh)))};
  if (mask) {
    args.mask = mask->data_ptr<bool>();
    args.mask_b = mask->size(0) == 1 ? 0 : mask->stride(0);
    args.mask_t = mask->stride(2);
    args.mask_k = mask->stride(3);
  }
  check_launch(attend(dtype_of(q), args, stream_of(q)), "attend_cache");
  return out;
}

torch::Tensor cfg_mix_cuda(const torch::Tensor& logits_in, double scale) {
  cpu::check_cfg_mix(logits_in);
  const c10::cuda::CUDAGuard guard(logits_in.device());
  const auto logits = logits_in.contiguous();
  auto sizes = logits.sizes().vec();
  sizes[0] /= 2;
  auto out = torch::empty(sizes, logits.options().dtype(torch::kFloat32));
  check_launch(
      cfg_mix(dtype_of(logits), logits.data_ptr(), out.data_ptr<float>(), out.numel(), float(scale), stream_of(logits)),
      "cfg_mix");
  return out;
}

void note_nonfinite_cuda(const torch::Tensor& x_in, const torch::Tensor& flag) {
  cpu::check_note_nonfinite(x_in, flag);
  if (x_in.scalar_type() == torch::kFloat64) {  // no kernel for float64: the composite formula
    flag.logical_or_(torch::isfinite(x_in).logical_not().any());
    return;
  }
  const c10::cuda::CUDAGuard guard(x_in.device());
  const auto x = x_in.contiguous();
  check_launch(note_nonfinite(dtype_of(x), x.data_ptr(), x.numel(), flag.data_ptr<bool>(), stream_of(x)),
               "note_nonfinite");
}

torch::Tensor keyed_uniforms_cuda(const torch::Tensor& sample_ids_in, const torch::Tensor& positions_in,
                                  const std::optional<torch::Tensor>& draws_in, int64_t seed, int64_t purpose) {
  cpu::check_keyed_uniforms(sample_ids_in, positions_in, draws_in);
  VISPEC_ASSERT(
      sample_ids_in.device() == positions_in.device() && (!draws_in || draws_in->device() == positions_in.device()),
      "keyed_uniforms: sample ids, positions and draws on one device");
  const c10::cuda::CUDAGuard guard(positions_in.device());
  const auto ids = sample_ids_in.contiguous(), positions = positions_in.contiguous();
  const auto draws = draws_in ? draws_in->contiguous() : torch::Tensor();
  auto u = torch::empty(positions.sizes(), positions.options().dtype(torch::kFloat64));
  check_launch(
      keyed_uniforms(ids.data_ptr<int64_t>(), positions.data_ptr<int64_t>(),
                     draws.defined() ? draws.data_ptr<int64_t>() : nullptr, u.data_ptr<double>(), positions.size(0),
                     positions.size(1), uint64_t(seed), uint32_t(purpose), stream_of(positions)),
      "keyed_uniforms");
  return u;
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor> tree_walk_cuda(
    const std::optional<torch::Tensor>& p, const std::optional<torch::Tensor>& target, const torch::Tensor& token,
    const torch::Tensor& depth, const torch::Tensor& children, const std::optional<torch::Tensor>& node_q,
    const std::optional<torch::Tensor>& q_slot, const std::optional<torch::Tensor>& neighbours,
    const std::optional<torch::Tensor>& weights, const torch::Tensor& limit,
    const std::optional<torch::Tensor>& u_accept, const std::optional<torch::Tensor>& u_resample,
    const std::optional<torch::Tensor>& u_sample, int64_t levels, int64_t rule, int64_t k, double delta, double lambda,
    bool optimal) {
  const c10::cuda::CUDAGuard guard(token.device());
  const auto c = prepare_tree_walk(p, target, token, depth, children, node_q, q_slot, neighbours, weights, limit,
                                   u_accept, u_resample, u_sample, levels, rule, k, delta, lambda, optimal);
  const int error = c.dtype == torch::kFloat64 ? tree_walk(c.args<double>(), c.B, stream_of(token))
                                               : tree_walk(c.args<float>(), c.B, stream_of(token));
  check_launch(error, "tree_walk");
  return c.outputs();
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor> tree_layout_cuda(
    const torch::Tensor& score, const torch::Tensor& parent, const torch::Tensor& token, const torch::Tensor& nodes,
    const torch::Tensor& roots, const torch::Tensor& root_index, int64_t top_k, int64_t depth, int64_t T,
    int64_t cells) {
  const c10::cuda::CUDAGuard guard(score.device());
  const auto c = prepare_tree_layout(score, parent, token, nodes, roots, root_index, top_k, depth, T, cells);
  check_launch(tree_layout(c.args, c.B, stream_of(score)), "tree_layout");
  return c.outputs();
}

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

std::tuple<torch::Tensor, torch::Tensor> draw_without_replacement_cuda(const torch::Tensor& q, const torch::Tensor& u) {
  const c10::cuda::CUDAGuard guard(q.device());
  const auto c = prepare_draws(q, u);
  const auto stream = stream_of(q);
  check_launch(
      c.double_q ? draw_without_replacement(c.f64, c.rows, stream) : draw_without_replacement(c.f32, c.rows, stream),
      "draw_without_replacement");
  return {c.tokens, c.probs};
}

}  // namespace vispec::kernels::cuda
