// vispec::tree_layout's and vispec::grow_level's checks and their CPU implementations, the references of the CUDA
// kernels: the bodies of kernels/tree_layout_body.h and kernels/tree_growth_body.h with one CPU thread playing
// every lane in turn, rows spread over LibTorch's threads.
#include <torch/torch.h>

#include "core/check.h"
#include "kernels/cpu_team.h"
#include "kernels/fused_ops_cpu.h"
#include "kernels/tree_layout_op.h"

namespace vispec::kernels {

TreeLayoutCall prepare_tree_layout(const torch::Tensor& score, const torch::Tensor& parent, const torch::Tensor& token,
                                   const torch::Tensor& nodes, const torch::Tensor& roots,
                                   const torch::Tensor& root_index, int64_t top_k, int64_t depth, int64_t T,
                                   int64_t cells) {
  VISPEC_ASSERT(score.dim() == 2 && top_k >= 1 && depth >= 0 && T >= 1 && cells >= 1 &&
                    score.size(1) == top_k + depth * top_k * top_k,
                "tree_layout: scores ", score.sizes(), " for top_k ", top_k, " and depth ", depth,
                " (K + D K^2 each), ", T, " nodes, ", cells, " cells");
  const int64_t B = score.size(0), C = score.size(1);
  const auto device = score.device();
  auto check = [&](const torch::Tensor& t, const char* what, std::vector<int64_t> sizes, torch::ScalarType dtype) {
    VISPEC_ASSERT(t.sizes() == torch::IntArrayRef(sizes) && t.scalar_type() == dtype && t.device() == device,
                  "tree_layout: ", what, " is ", t.sizes(), " ", t.scalar_type(), " on ", t.device(), ", not ",
                  torch::IntArrayRef(sizes), " ", dtype, " on ", device);
    return t.contiguous();
  };
  TreeLayoutCall c;
  c.B = B;
  c.score = check(score, "score", {B, C}, torch::kFloat64);
  c.parent = check(parent, "parent", {B, C}, torch::kInt64);
  c.token = check(token, "token", {B, C}, torch::kInt64);
  c.nodes = check(nodes, "nodes", {B}, torch::kInt64);
  c.roots = check(roots, "roots", {B}, torch::kInt64);
  c.root_index = check(root_index, "root_index", {B}, torch::kInt64);
  const auto i64 = score.options().dtype(torch::kInt64), boolean = score.options().dtype(torch::kBool);
  c.keep = torch::empty({B, C}, boolean);
  c.node_of = torch::empty({B, C}, i64);
  c.node_parent = torch::empty({B, T}, i64);
  c.tok = torch::empty({B, T}, i64);
  c.depth = torch::empty({B, T}, i64);
  c.pos = torch::empty({B, T}, i64);
  c.mask = torch::empty({B, T, T}, boolean);
  c.children = torch::empty({B, T, top_k}, i64);
  auto& a = c.args;
  a.score = c.score.data_ptr<double>();
  a.parent = c.parent.data_ptr<int64_t>(), a.token = c.token.data_ptr<int64_t>();
  a.nodes = c.nodes.data_ptr<int64_t>(), a.roots = c.roots.data_ptr<int64_t>();
  a.root_index = c.root_index.data_ptr<int64_t>();
  a.C = C, a.K = top_k, a.D = depth, a.T = T, a.cells = cells;
  a.keep = c.keep.data_ptr<bool>(), a.node_of = c.node_of.data_ptr<int64_t>();
  a.node_parent = c.node_parent.data_ptr<int64_t>(), a.tok = c.tok.data_ptr<int64_t>();
  a.depth = c.depth.data_ptr<int64_t>(), a.pos = c.pos.data_ptr<int64_t>();
  a.mask = c.mask.data_ptr<bool>(), a.children = c.children.data_ptr<int64_t>();
  return c;
}

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

namespace cpu {

void grow_level(const torch::Tensor& lp, const torch::Tensor& idx, const torch::Tensor& own, const torch::Tensor& score,
                const torch::Tensor& cand_token, const torch::Tensor& cand_parent, const torch::Tensor& cand_score,
                const torch::Tensor& frontier, const torch::Tensor& tokens, const torch::Tensor& parent_slot,
                const torch::Tensor& mask, int64_t level) {
  const auto c = prepare_grow_level(lp, idx, own, score, cand_token, cand_parent, cand_score, frontier, tokens,
                                    parent_slot, mask, level);
  auto grow_rows = [&](const auto& args) {
    for_each_row_on_teams(c.B, [&](CpuTeam& team, int64_t b) { growth::grow_row(team, args, b); });
  };
  if (c.double_lp) grow_rows(c.f64);
  else grow_rows(c.f32);
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor> tree_layout(
    const torch::Tensor& score, const torch::Tensor& parent, const torch::Tensor& token, const torch::Tensor& nodes,
    const torch::Tensor& roots, const torch::Tensor& root_index, int64_t top_k, int64_t depth, int64_t T,
    int64_t cells) {
  const auto c = prepare_tree_layout(score, parent, token, nodes, roots, root_index, top_k, depth, T, cells);
  for_each_row_on_teams(c.B, [&](CpuTeam& team, int64_t b) { layout::lay_out_row(team, c.args, b); });
  return c.outputs();
}

}  // namespace cpu
}  // namespace vispec::kernels
