// The fused operators' schemas and their implementations per backend, and the C++ calls that go through
// the dispatcher (so that each counts as one operator, and runs the CPU or CUDA kernel by its inputs' device).
#include "kernels/fused_ops.h"

#include <torch/library.h>
#include <torch/torch.h>

#include "kernels/fused_ops_cpu.h"
#ifdef VISPEC_CUDA_KERNELS
#include "kernels/fused_ops_cuda_impl.h"
#endif

namespace vispec::kernels {

namespace {

template <class Signature>
c10::TypedOperatorHandle<Signature> handle(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Signature>();
}

}  // namespace

TORCH_LIBRARY(vispec, m) {
  m.def("rms_norm(Tensor x, Tensor weight, float eps) -> Tensor");
  m.def("add_rms_norm(Tensor x, Tensor delta, Tensor weight, float eps) -> (Tensor, Tensor)");
  m.def("silu_mul(Tensor gate_up) -> Tensor");
  m.def(
      "rope_write_kv(Tensor qkv, Tensor rope, Tensor(a!) k_cache, Tensor(b!) v_cache, Tensor slots, int n_head, "
      "int n_kv_head, bool half_split) -> Tensor");
  m.def("linear(Tensor x, Tensor weight) -> Tensor");
  m.def("linear_silu_mul(Tensor x, Tensor weight) -> Tensor");
  m.def("attend_cache(Tensor q, Tensor k_cache, Tensor v_cache, int keys, Tensor? mask, bool causal) -> Tensor");
  m.def(
      "sample_next(Tensor logits, Tensor u, float temperature, int top_k, float top_p, Tensor(a!) nonfinite) -> "
      "Tensor");
  m.def("cfg_mix(Tensor logits, float scale) -> Tensor");
  m.def("note_nonfinite(Tensor x, Tensor(a!) flag) -> ()");
  m.def("keyed_uniforms(Tensor sample_ids, Tensor positions, Tensor? draws, int seed, int purpose) -> Tensor");
  m.def(
      "tree_walk(Tensor? p, Tensor? target, Tensor token, Tensor depth, Tensor children, Tensor? node_q, "
      "Tensor? q_slot, Tensor? neighbours, Tensor? weights, Tensor limit, Tensor? u_accept, Tensor? u_resample, "
      "Tensor? u_sample, int levels, int rule, int k, float delta, float lambda, bool optimal) "
      "-> (Tensor, Tensor, Tensor, Tensor, Tensor)");
  m.def(
      "tree_layout(Tensor score, Tensor parent, Tensor token, Tensor nodes, Tensor roots, Tensor root_index, "
      "int top_k, int depth, int T, int cells) -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)");
  m.def(
      "grow_level(Tensor lp, Tensor idx, Tensor own, Tensor(a!) score, Tensor(b!) cand_token, "
      "Tensor(c!) cand_parent, Tensor(d!) cand_score, Tensor(e!) frontier, Tensor(f!) tokens, "
      "Tensor(g!) parent_slot, Tensor(h!) mask, int level) -> ()");
  m.def("draw_without_replacement(Tensor q, Tensor u) -> (Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(vispec, CPU, m) {
  m.impl("rms_norm", &cpu::rms_norm);
  m.impl("add_rms_norm", &cpu::add_rms_norm);
  m.impl("silu_mul", &cpu::silu_mul);
  m.impl("linear_silu_mul", &cpu::linear_silu_mul);
  m.impl("rope_write_kv", &cpu::rope_write_kv);
  m.impl("sample_next", &cpu::sample_next);
  m.impl("cfg_mix", &cpu::cfg_mix);
  m.impl("note_nonfinite", &cpu::note_nonfinite);
  m.impl("keyed_uniforms", &cpu::keyed_uniforms);
  m.impl("tree_walk", &cpu::tree_walk);
  m.impl("tree_layout", &cpu::tree_layout);
  m.impl("grow_level", &cpu::grow_level);
  m.impl("draw_without_replacement", &cpu::draw_without_replacement);
}

TORCH_LIBRARY_IMPL(vispec, CompositeExplicitAutograd, m) {
  m.impl("attend_cache", &cpu::attend_cache);
  m.impl("linear", &cpu::linear);
}

#ifdef VISPEC_CUDA_KERNELS
TORCH_LIBRARY_IMPL(vispec, CUDA, m) {
  m.impl("rms_norm", &cuda::rms_norm_cuda);
  m.impl("add_rms_norm", &cuda::add_rms_norm_cuda);
  m.impl("silu_mul", &cuda::silu_mul_cuda);
  m.impl("rope_write_kv", &cuda::rope_write_kv_cuda);
  m.impl("attend_cache", &cuda::attend_cache_cuda);
  m.impl("linear", &cuda::linear_cuda);
  m.impl("linear_silu_mul", &cuda::linear_silu_mul_cuda);
  m.impl("sample_next", &cuda::sample_next_cuda);
  m.impl("cfg_mix", &cuda::cfg_mix_cuda);
  m.impl("note_nonfinite", &cuda::note_nonfinite_cuda);
  m.impl("keyed_uniforms", &cuda::keyed_uniforms_cuda);
  m.impl("tree_walk", &cuda::tree_walk_cuda);
  m.impl("tree_layout", &cuda::tree_layout_cuda);
  m.impl("grow_level", &cuda::grow_level_cuda);
  m.impl("draw_without_replacement", &cuda::draw_without_replacement_cuda);
}
#endif

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  static const auto op = handle<at::Tensor(const at::Tensor&, const at::Tensor&, double)>("vispec::rms_norm");
  return op.call(x, weight, eps);
}

std::tuple<at::Tensor, at::Tensor> add_rms_norm(const at::Tensor& x, const at::Tensor& delta, const at::Tensor& weight,
                                                double eps) {
  static const auto op =
      handle<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&, const at::Tensor&, double)>(
          "vispec::add_rms_norm");
  return op.call(x, delta, weight, eps);
}

at::Tensor silu_mul(const at::Tensor& gate_up) {
  static const auto op = handle<at::Tensor(const at::Tensor&)>("vispec::silu_mul");
  return op.call(gate_up);
}

at::Tensor rope_write_kv(const at::Tensor& qkv, const at::Tensor& rope, const at::Tensor& k_cache,
                         const at::Tensor& v_cache, const at::Tensor& slots, int64_t n_head, int64_t n_kv_head,
                         bool half_split) {
  static const auto op = handle<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                           const at::Tensor&, int64_t, int64_t, bool)>("vispec::rope_write_kv");
  return op.call(qkv, rope, k_cache, v_cache, slots, n_head, n_kv_head, half_split);
}

at::Tensor linear(const at::Tensor& x, const at::Tensor& weight) {
  static const auto op = handle<at::Tensor(const at::Tensor&, const at::Tensor&)>("vispec::linear");
  return op.call(x, weight);
}

at::Tensor linear_silu_mul(const at::Tensor& x, const at::Tensor& weight) {
  static const auto op = handle<at::Tensor(const at::Tensor&, const at::Tensor&)>("vispec::linear_silu_mul");
  return op.call(x, weight);
}

at::Tensor attend_cache(const at::Tensor& q, const at::Tensor& k_cache, const at::Tensor& v_cache, int64_t keys,
                        const std::optional<at::Tensor>& mask, bool causal) {
  static const auto op = handle<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, int64_t,
                                           const std::optional<at::Tensor>&, bool)>("vispec::attend_cache");
  return op.call(q, k_cache, v_cache, keys, mask, causal);
}

at::Tensor sample_next(const at::Tensor& logits, const at::Tensor& u, double temperature, int64_t top_k, double top_p,
                       const at::Tensor& nonfinite) {
  static const auto op =
      handle<at::Tensor(const at::Tensor&, const at::Tensor&, double, int64_t, double, const at::Tensor&)>(
          "vispec::sample_next");
  return op.call(logits, u, temperature, top_k, top_p, nonfinite);
}

at::Tensor cfg_mix(const at::Tensor& logits, double scale) {
  static const auto op = handle<at::Tensor(const at::Tensor&, double)>("vispec::cfg_mix");
  return op.call(logits, scale);
}

void note_nonfinite(const at::Tensor& x, const at::Tensor& flag) {
  static const auto op = handle<void(const at::Tensor&, const at::Tensor&)>("vispec::note_nonfinite");
  op.call(x, flag);
}

at::Tensor keyed_uniforms(const at::Tensor& sample_ids, const at::Tensor& positions,
                          const std::optional<at::Tensor>& draws, int64_t seed, int64_t purpose) {
  static const auto op =
      handle<at::Tensor(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&, int64_t, int64_t)>(
          "vispec::keyed_uniforms");
  return op.call(sample_ids, positions, draws, seed, purpose);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> tree_walk(
    const std::optional<at::Tensor>& p, const std::optional<at::Tensor>& target, const at::Tensor& token,
    const at::Tensor& depth, const at::Tensor& children, const std::optional<at::Tensor>& node_q,
    const std::optional<at::Tensor>& q_slot, const std::optional<at::Tensor>& neighbours,
    const std::optional<at::Tensor>& weights, const at::Tensor& limit, const std::optional<at::Tensor>& u_accept,
    const std::optional<at::Tensor>& u_resample, const std::optional<at::Tensor>& u_sample, int64_t levels,
    int64_t rule, int64_t k, double delta, double lambda, bool optimal) {
  using Optional = const std::optional<at::Tensor>&;
  using Tensor = const at::Tensor&;
  static const auto op = handle<std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>(
      Optional, Optional, Tensor, Tensor, Tensor, Optional, Optional, Optional, Optional, Tensor, Optional, Optional,
      Optional, int64_t, int64_t, int64_t, double, double, bool)>("vispec::tree_walk");
  return op.call(p, target, token, depth, children, node_q, q_slot, neighbours, weights, limit, u_accept, u_resample,
                 u_sample, levels, rule, k, delta, lambda, optimal);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> tree_layout(
    const at::Tensor& score, const at::Tensor& parent, const at::Tensor& token, const at::Tensor& nodes,
    const at::Tensor& roots, const at::Tensor& root_index, int64_t top_k, int64_t depth, int64_t T, int64_t cells) {
  using Tensor = const at::Tensor&;
  static const auto op = handle<std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>(
      Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, int64_t, int64_t, int64_t, int64_t)>("vispec::tree_layout");
  return op.call(score, parent, token, nodes, roots, root_index, top_k, depth, T, cells);
}

void grow_level(const at::Tensor& lp, const at::Tensor& idx, const at::Tensor& own, const at::Tensor& score,
                const at::Tensor& cand_token, const at::Tensor& cand_parent, const at::Tensor& cand_score,
                const at::Tensor& frontier, const at::Tensor& tokens, const at::Tensor& parent_slot,
                const at::Tensor& mask, int64_t level) {
  using Tensor = const at::Tensor&;
  static const auto op =
      handle<void(Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, int64_t)>(
          "vispec::grow_level");
  op.call(lp, idx, own, score, cand_token, cand_parent, cand_score, frontier, tokens, parent_slot, mask, level);
}

std::tuple<at::Tensor, at::Tensor> draw_without_replacement(const at::Tensor& q, const at::Tensor& u) {
  static const auto op = handle<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&)>(
      "vispec::draw_without_replacement");
  return op.call(q, u);
}

}  // namespace vispec::kernels
