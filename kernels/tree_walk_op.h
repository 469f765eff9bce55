// What the CPU and CUDA implementations of vispec::tree_walk (kernels/fused_ops.h) share: the checks of its
// inputs, its outputs and scratch made on the inputs' device, and the walk's arguments pointing at them
// (kernels/tree_walk_body.h). Included only by the two implementations.
#pragma once

#include <torch/torch.h>

#include <optional>
#include <tuple>

#include "kernels/tree_walk_body.h"

namespace vispec::kernels {

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

// Checks the op's inputs (one message per mistake) and makes its outputs and scratch.
TreeWalkCall prepare_tree_walk(const std::optional<torch::Tensor>& p, const std::optional<torch::Tensor>& target,
                               const torch::Tensor& token, const torch::Tensor& depth, const torch::Tensor& children,
                               const std::optional<torch::Tensor>& node_q, const std::optional<torch::Tensor>& q_slot,
                               const std::optional<torch::Tensor>& neighbours,
                               const std::optional<torch::Tensor>& weights, const torch::Tensor& limit,
                               const std::optional<torch::Tensor>& u_accept,
                               const std::optional<torch::Tensor>& u_resample,
                               const std::optional<torch::Tensor>& u_sample, int64_t levels, int64_t rule, int64_t k,
                               double delta, double lambda, bool optimal);

}  // namespace vispec::kernels
