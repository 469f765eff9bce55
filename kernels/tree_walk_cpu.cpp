// vispec::tree_walk's checks and its CPU implementation, the reference of the CUDA kernel: the body of
// kernels/tree_walk_body.h with one CPU thread playing every lane in turn, rows spread over LibTorch's threads.
#include <torch/torch.h>

#include "core/check.h"
#include "kernels/cpu_team.h"
#include "kernels/fused_ops_cpu.h"
#include "kernels/tree_walk_op.h"

namespace vispec::kernels {

namespace {

torch::Tensor given(const std::optional<torch::Tensor>& t) { return t ? t->contiguous() : torch::Tensor(); }

void check_shape(const torch::Tensor& t, const char* what, std::vector<int64_t> sizes, torch::ScalarType dtype,
                 const torch::Device& device) {
  VISPEC_ASSERT(t.sizes() == torch::IntArrayRef(sizes) && t.scalar_type() == dtype && t.device() == device,
                "tree_walk: ", what, " is ", t.sizes(), " ", t.scalar_type(), " on ", t.device(), ", not ",
                torch::IntArrayRef(sizes), " ", dtype, " on ", device);
}

}  // namespace

TreeWalkCall prepare_tree_walk(const std::optional<torch::Tensor>& p, const std::optional<torch::Tensor>& target,
                               const torch::Tensor& token, const torch::Tensor& depth, const torch::Tensor& children,
                               const std::optional<torch::Tensor>& node_q, const std::optional<torch::Tensor>& q_slot,
                               const std::optional<torch::Tensor>& neighbours,
                               const std::optional<torch::Tensor>& weights, const torch::Tensor& limit,
                               const std::optional<torch::Tensor>& u_accept,
                               const std::optional<torch::Tensor>& u_resample,
                               const std::optional<torch::Tensor>& u_sample, int64_t levels, int64_t rule, int64_t k,
                               double delta, double lambda, bool optimal) {
  VISPEC_ASSERT(bool(p) != bool(target), "tree_walk takes the target's distributions p or its argmax, not ",
                p ? "both" : "neither");
  VISPEC_ASSERT(token.dim() == 2 && children.dim() == 3 && levels >= 0 && rule >= walk::kExact && rule <= walk::kCoolSd,
                "tree_walk: token ", token.sizes(), ", children ", children.sizes(), ", levels ", levels, ", rule ",
                rule);
  TreeWalkCall c;
  const auto device = token.device();
  const int64_t B = token.size(0), T = token.size(1), C = children.size(2), L = levels;
  c.B = B, c.levels = L, c.rule = rule, c.k = k, c.delta = delta, c.lambda = lambda, c.optimal = optimal;
  c.token = token.contiguous(), c.depth = depth.contiguous(), c.children = children.contiguous();
  c.limit = limit.contiguous();
  check_shape(c.token, "token", {B, T}, torch::kInt64, device);
  check_shape(c.depth, "depth", {B, T}, torch::kInt64, device);
  check_shape(c.children, "children", {B, T, C}, torch::kInt64, device);
  check_shape(c.limit, "limit", {B}, torch::kInt64, device);
  c.p = given(p), c.target = given(target), c.node_q = given(node_q), c.q_slot = given(q_slot);
  c.neighbours = given(neighbours), c.weights = given(weights);
  c.u_accept = given(u_accept), c.u_resample = given(u_resample), c.u_sample = given(u_sample);
  const bool sampling = c.p.defined();
  int64_t V = 0;
  if (sampling) {
    VISPEC_ASSERT(c.p.dim() == 3 && (c.p.scalar_type() == torch::kFloat32 || c.p.scalar_type() == torch::kFloat64),
                  "tree_walk: p is ", c.p.sizes(), " ", c.p.scalar_type(), ", not [B, T, V] float32 or float64");
    c.dtype = c.p.scalar_type();
    V = c.p.size(2);
    check_shape(c.p, "p", {B, T, V}, c.dtype, device);
    VISPEC_ASSERT(V > 0, "tree_walk: an empty vocabulary");
    VISPEC_ASSERT(c.node_q.defined() == c.q_slot.defined(), "tree_walk: node_q and q_slot come together");
    if (c.node_q.defined()) {
      VISPEC_ASSERT(c.node_q.dim() == 3, "tree_walk: node_q is ", c.node_q.sizes(), ", not [B, S, V]");
      check_shape(c.node_q, "node_q", {B, c.node_q.size(1), V}, c.dtype, device);
      check_shape(c.q_slot, "q_slot", {B, T}, torch::kInt64, device);
    }
    check_shape(c.u_resample, "u_resample", {B, L + 1}, torch::kFloat64, device);
    check_shape(c.u_sample, "u_sample", {B, L + 1}, torch::kFloat64, device);
  } else {
    check_shape(c.target, "target", {B, T}, torch::kInt64, device);
    VISPEC_ASSERT(!c.node_q.defined(), "tree_walk: a greedy walk reads no node_q");
  }
  if (sampling || rule == walk::kCoolSd) check_shape(c.u_accept, "u_accept", {B, L, C}, torch::kFloat64, device);
  if (rule == walk::kCoolSd) {
    VISPEC_ASSERT(c.weights.defined() && c.weights.dim() == 2 && c.weights.size(1) >= 1,
                  "tree_walk: Cool-SD needs its weights [B, >= 1]");
    check_shape(c.weights, "weights", {B, c.weights.size(1)}, torch::kFloat64, device);
  }
  if (sampling && (rule == walk::kLantern || rule == walk::kLanternPlusPlus)) {
    VISPEC_ASSERT(c.neighbours.defined() && c.neighbours.dim() == 2 && k >= 0 && k <= c.neighbours.size(1),
                  "tree_walk: LANTERN rules need the neighbour table [codes, >= k], k = ", k);
    check_shape(c.neighbours, "neighbours", {c.neighbours.size(0), c.neighbours.size(1)}, torch::kInt64, device);
  }
  const auto f64 = token.options().dtype(torch::kFloat64);
  if (sampling) {
    c.pc = torch::empty({B, V}, f64);
    if (c.node_q.defined()) c.q_left = torch::empty({B, V}, f64);
    if ((rule == walk::kLantern || rule == walk::kLanternPlusPlus) && !optimal) c.alt = torch::empty({B, V}, f64);
  }
  c.path = torch::empty({B, L + 2}, token.options());
  c.accepted = torch::empty({B}, token.options());
  c.next = torch::empty({B}, token.options());
  c.sampled = torch::empty({B}, token.options().dtype(torch::kBool));
  c.tried = torch::empty({B}, token.options());
  return c;
}

namespace cpu {

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor> tree_walk(
    const std::optional<torch::Tensor>& p, const std::optional<torch::Tensor>& target, const torch::Tensor& token,
    const torch::Tensor& depth, const torch::Tensor& children, const std::optional<torch::Tensor>& node_q,
    const std::optional<torch::Tensor>& q_slot, const std::optional<torch::Tensor>& neighbours,
    const std::optional<torch::Tensor>& weights, const torch::Tensor& limit,
    const std::optional<torch::Tensor>& u_accept, const std::optional<torch::Tensor>& u_resample,
    const std::optional<torch::Tensor>& u_sample, int64_t levels, int64_t rule, int64_t k, double delta, double lambda,
    bool optimal) {
  const auto c = prepare_tree_walk(p, target, token, depth, children, node_q, q_slot, neighbours, weights, limit,
                                   u_accept, u_resample, u_sample, levels, rule, k, delta, lambda, optimal);
  auto walk_rows = [&](auto zero) {
    const auto args = c.args<decltype(zero)>();
    for_each_row_on_teams(c.B, [&](CpuTeam& team, int64_t b) { walk::walk_row(team, args, b); });
  };
  if (c.dtype == torch::kFloat64) walk_rows(double{});
  else walk_rows(float{});
  return c.outputs();
}

}  // namespace cpu
}  // namespace vispec::kernels
