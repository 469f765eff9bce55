// vispec::tree_layout: its schema, its checks and the arguments of kernels/tree_layout_body.h made from its tensors,
// the CPU reference (the body with one CPU thread playing every lane in turn, rows over LibTorch's threads), the
// CUDA binding and kernel check (kernels/README.md), and its C++ call.
#include "kernels/tree_layout.h"

#include <limits>

#include "core/check.h"
#include "kernels/cpu_team.h"
#include "kernels/operator.h"
#include "kernels/tree_layout_body.h"

namespace vispec::kernels {

namespace {

// The layout's inputs made contiguous, its outputs and scratch on their device, and the body's arguments.
struct TreeLayoutCall {
  int64_t B = 0;
  torch::Tensor score, parent, token, nodes, roots, root_index;  // contiguous
  torch::Tensor keep, node_of, node_parent, tok, depth, pos, mask, children;
  layout::Args args;

  std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor> outputs() const {
    return {keep, tok, depth, pos, mask, children};
  }
};

// Checks the op's inputs (one message per mistake), makes its outputs and scratch and points args at them.
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

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor> tree_layout_cpu(
    const torch::Tensor& score, const torch::Tensor& parent, const torch::Tensor& token, const torch::Tensor& nodes,
    const torch::Tensor& roots, const torch::Tensor& root_index, int64_t top_k, int64_t depth, int64_t T,
    int64_t cells) {
  const auto c = prepare_tree_layout(score, parent, token, nodes, roots, root_index, top_k, depth, T, cells);
  for_each_row_on_teams(c.B, [&](CpuTeam& team, int64_t b) { layout::lay_out_row(team, c.args, b); });
  return c.outputs();
}

}  // namespace

#ifdef VISPEC_CUDA_KERNELS
namespace cuda {

// kernels/tree_layout.cu: the layout, one block of team::kLanes threads per row.
int tree_layout(const layout::Args& args, int64_t B, CUstream_st* stream);

namespace {

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor> tree_layout_cuda(
    const torch::Tensor& score, const torch::Tensor& parent, const torch::Tensor& token, const torch::Tensor& nodes,
    const torch::Tensor& roots, const torch::Tensor& root_index, int64_t top_k, int64_t depth, int64_t T,
    int64_t cells) {
  const c10::cuda::CUDAGuard guard(score.device());
  const auto c = prepare_tree_layout(score, parent, token, nodes, roots, root_index, top_k, depth, T, cells);
  check_launch(tree_layout(c.args, c.B, stream_of(score)), "tree_layout");
  return c.outputs();
}

// The tree layout of two rows' candidates (K 2, depth 2: 10 each) with a tie, a filtered candidate and a cut
// parent: the same kept candidates, tables and mask as the CPU reference.
std::string kernel_check_tree_layout(const c10::Device& device, c10::ScalarType) {
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
  const auto gpu = kernels::tree_layout(score.to(device), parent.to(device), token.to(device), nodes.to(device),
                                        roots.to(device), root_index.to(device), K, D, T, 16);
  const auto cpu = kernels::tree_layout(score, parent, token, nodes, roots, root_index, K, D, T, 16);
  return same_result(gpu, cpu) ? "" : "tree_layout laid the trees out otherwise";
}

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(vispec, CUDA, m) { m.impl("tree_layout", &cuda::tree_layout_cuda); }
#endif

TORCH_LIBRARY_FRAGMENT(vispec, m) {
  m.def(
      "tree_layout(Tensor score, Tensor parent, Tensor token, Tensor nodes, Tensor roots, Tensor root_index, "
      "int top_k, int depth, int T, int cells) -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(vispec, CPU, m) { m.impl("tree_layout", &tree_layout_cpu); }

VISPEC_KERNEL(tree_layout, 1, &cuda::kernel_check_tree_layout);

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> tree_layout(
    const at::Tensor& score, const at::Tensor& parent, const at::Tensor& token, const at::Tensor& nodes,
    const at::Tensor& roots, const at::Tensor& root_index, int64_t top_k, int64_t depth, int64_t T, int64_t cells) {
  using Tensor = const at::Tensor&;
  static const auto op =
      operator_handle<std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>(
          Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, int64_t, int64_t, int64_t, int64_t)>("vispec::tree_layout");
  return op.call(score, parent, token, nodes, roots, root_index, top_k, depth, T, cells);
}

}  // namespace vispec::kernels
