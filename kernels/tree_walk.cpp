// vispec::tree_walk: its schema, its checks and the arguments of kernels/tree_walk_body.h made from its tensors,
// the CPU reference (the body with one CPU thread playing every lane in turn, rows over LibTorch's threads), the
// CUDA binding and kernel check (kernels/README.md), and its C++ call.
#include "kernels/tree_walk.h"

#include "core/check.h"
#include "kernels/cpu_team.h"
#include "kernels/operator.h"
#include "kernels/tree_walk_body.h"

namespace vispec::kernels {

namespace {

// The walk's inputs made contiguous, its outputs and scratch on their device, and the body's arguments.
struct TreeWalkCall {
  int64_t B = 0;
  torch::ScalarType dtype = torch::kFloat32;  // p's and node_q's (float32 where there is no p)
  torch::Tensor p, target, token, depth, children, node_q, q_slot, neighbours, weights, limit, u_accept, u_resample,
      u_sample;                   // contiguous, or undefined
  torch::Tensor pc, q_left, alt;  // scratch
  torch::Tensor path, accepted, next, sampled, tried;
  int64_t levels = 0, rule = 0, k = 0;
  double delta = 0, lambda = 1;
  bool optimal = false;

  template <typename P>
  walk::Args<P> args() const {
    walk::Args<P> a;
    auto ptr = [](const torch::Tensor& t, auto* type) {
      using T = std::remove_pointer_t<decltype(type)>;
      return t.defined() ? static_cast<const T*>(t.data_ptr()) : nullptr;
    };
    a.p = ptr(p, (P*)nullptr);
    a.target = ptr(target, (int64_t*)nullptr);
    a.token = ptr(token, (int64_t*)nullptr);
    a.depth = ptr(depth, (int64_t*)nullptr);
    a.children = ptr(children, (int64_t*)nullptr);
    a.node_q = ptr(node_q, (P*)nullptr);
    a.q_slot = ptr(q_slot, (int64_t*)nullptr);
    a.neighbours = ptr(neighbours, (int64_t*)nullptr);
    a.weights = ptr(weights, (double*)nullptr);
    a.limit = ptr(limit, (int64_t*)nullptr);
    a.u_accept = ptr(u_accept, (double*)nullptr);
    a.u_resample = ptr(u_resample, (double*)nullptr);
    a.u_sample = ptr(u_sample, (double*)nullptr);
    a.T = token.size(1), a.C = children.size(2), a.L = levels;
    a.V = p.defined() ? p.size(2) : 0;
    a.S = node_q.defined() ? node_q.size(1) : 0;
    a.codes = neighbours.defined() ? neighbours.size(0) : 0;
    a.nn_cols = neighbours.defined() ? neighbours.size(1) : 0;
    a.w_cols = weights.defined() ? weights.size(1) : 0;
    a.rule = int(rule), a.k = k, a.delta = delta, a.lambda = lambda, a.optimal = optimal;
    auto scratch = [](const torch::Tensor& t) { return t.defined() ? t.data_ptr<double>() : nullptr; };
    a.pc = scratch(pc), a.q_left = scratch(q_left), a.alt = scratch(alt);
    a.path = path.data_ptr<int64_t>(), a.accepted = accepted.data_ptr<int64_t>(), a.next = next.data_ptr<int64_t>();
    a.sampled = sampled.data_ptr<bool>(), a.tried = tried.data_ptr<int64_t>();
    return a;
  }
  std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor> outputs() const {
    return {path, accepted, next, sampled, tried};
  }
};

torch::Tensor given(const std::optional<torch::Tensor>& t) { return t ? t->contiguous() : torch::Tensor(); }

void check_shape(const torch::Tensor& t, const char* what, std::vector<int64_t> sizes, torch::ScalarType dtype,
                 const torch::Device& device) {
  VISPEC_ASSERT(t.sizes() == torch::IntArrayRef(sizes) && t.scalar_type() == dtype && t.device() == device,
                "tree_walk: ", what, " is ", t.sizes(), " ", t.scalar_type(), " on ", t.device(), ", not ",
                torch::IntArrayRef(sizes), " ", dtype, " on ", device);
}

// Checks the op's inputs (one message per mistake) and makes its outputs and scratch.
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

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor> tree_walk_cpu(
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

}  // namespace

#ifdef VISPEC_CUDA_KERNELS
namespace cuda {

// kernels/tree_walk.cu: the walk, one block of walk::kLanes threads per row.
int tree_walk(const walk::Args<float>& args, int64_t B, CUstream_st* stream);
int tree_walk(const walk::Args<double>& args, int64_t B, CUstream_st* stream);

namespace {

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

// The tree walk on a small tree (0 -> 1, 2; 1 -> 3; 3 -> 4) in two rows, one whose uniforms accept and one
// whose uniforms reject, under each rule, sampling and greedy: the same paths and tokens as the CPU reference.
std::string kernel_check_tree_walk(const c10::Device& device, c10::ScalarType) {
  const int64_t B = 2, T = 5, C = 2, V = 64, L = 3;
  const auto token = torch::tensor({0, 7, 11, 3, 5}, torch::kInt64).repeat({B, 1});
  const auto depth = torch::tensor({0, 1, 1, 2, 3}, torch::kInt64).repeat({B, 1});
  const auto children =
      torch::tensor({1, 2, 3, -1, -1, -1, 4, -1, -1, -1}, torch::kInt64).view({1, T, C}).repeat({B, 1, 1});
  const auto p = torch::softmax(check_pattern({B, T, V}, 0.5, torch::kFloat32) * 3, -1);
  const auto node_q = torch::softmax(check_pattern({B, T, V}, 1.1, torch::kFloat32) * 3, -1);
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
        return kernels::tree_walk(
            greedy ? std::nullopt : on(p, d), greedy ? on(target, d) : std::nullopt, token.to(d), depth.to(d),
            children.to(d), with_q ? on(node_q, d) : std::nullopt, with_q ? on(q_slot, d) : std::nullopt,
            lantern && !greedy ? on(neighbours, d) : std::nullopt, rule == 3 ? on(weights, d) : std::nullopt,
            limit.to(d), on(u_accept, d), on(u_resample, d), on(u_sample, d), L, rule, lantern && !greedy ? 8 : 0, 0.3,
            2.0, false);
      };
      const auto gpu = walk(device), cpu = walk(torch::kCPU);
      if (!same_result(gpu, cpu))
        return "tree_walk (rule " + std::to_string(rule) +
               (greedy   ? ", greedy"
                : with_q ? ", with q"
                         : "") +
               ") walked otherwise";
    }
  return "";
}

}  // namespace
}  // namespace cuda

TORCH_LIBRARY_IMPL(vispec, CUDA, m) { m.impl("tree_walk", &cuda::tree_walk_cuda); }
#endif

TORCH_LIBRARY_FRAGMENT(vispec, m) {
  m.def(
      "tree_walk(Tensor? p, Tensor? target, Tensor token, Tensor depth, Tensor children, Tensor? node_q, "
      "Tensor? q_slot, Tensor? neighbours, Tensor? weights, Tensor limit, Tensor? u_accept, Tensor? u_resample, "
      "Tensor? u_sample, int levels, int rule, int k, float delta, float lambda, bool optimal) "
      "-> (Tensor, Tensor, Tensor, Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(vispec, CPU, m) { m.impl("tree_walk", &tree_walk_cpu); }

VISPEC_KERNEL(tree_walk, 1, &cuda::kernel_check_tree_walk);

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> tree_walk(
    const std::optional<at::Tensor>& p, const std::optional<at::Tensor>& target, const at::Tensor& token,
    const at::Tensor& depth, const at::Tensor& children, const std::optional<at::Tensor>& node_q,
    const std::optional<at::Tensor>& q_slot, const std::optional<at::Tensor>& neighbours,
    const std::optional<at::Tensor>& weights, const at::Tensor& limit, const std::optional<at::Tensor>& u_accept,
    const std::optional<at::Tensor>& u_resample, const std::optional<at::Tensor>& u_sample, int64_t levels,
    int64_t rule, int64_t k, double delta, double lambda, bool optimal) {
  using T = const at::Tensor&;
  using O = const std::optional<at::Tensor>&;
  static const auto op = operator_handle<std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>(
      O, O, T, T, T, O, O, O, O, T, O, O, O, int64_t, int64_t, int64_t, double, double, bool)>("vispec::tree_walk");
  return op.call(p, target, token, depth, children, node_q, q_slot, neighbours, weights, limit, u_accept, u_resample,
                 u_sample, levels, rule, k, delta, lambda, optimal);
}

}  // namespace vispec::kernels
