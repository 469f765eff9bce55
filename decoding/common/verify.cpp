#include "decoding/common/verify.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "core/check.h"
#include "core/rng.h"
#include "decoding/common/sampler.h"
#include "kernels/tree_walk.h"
#include "kernels/kernel_check.h"

namespace vispec {

namespace {
torch::Tensor i64(const torch::Tensor& t) { return t.to(torch::kInt64); }

// 1 .. G for every row, flattened [B G]: each draft's depth in its chain.
torch::Tensor chain_depths(int64_t B, int64_t G, const torch::Device& device) {
  return torch::arange(1, G + 1, torch::TensorOptions().dtype(torch::kInt64).device(device)).repeat({B});
}

// The run of accepted drafts before the first failure: ok [B, G] -> a [B].
torch::Tensor leading_run(const torch::Tensor& ok) { return i64(ok).cumprod(1).sum(1); }

// Rows' positions j < count[b], [B, G].
torch::Tensor within_count(const torch::Tensor& count, int64_t G) {
  return torch::arange(G, count.options().dtype(torch::kInt64)).view({1, G}) < i64(count).view({-1, 1});
}

// t [B, T, ...] at index idx [B] of dim 1 -> [B, ...].
torch::Tensor at_index(const torch::Tensor& t, const torch::Tensor& idx) {
  auto shape = t.sizes().vec();
  shape[1] = 1;
  auto view = std::vector<int64_t>(t.dim(), 1);
  view[0] = t.size(0);
  return t.gather(1, idx.view(view).expand(shape)).squeeze(1);
}
}  // namespace

namespace {
std::optional<torch::Tensor> optional(const torch::Tensor& t) {
  return t.defined() ? std::optional<torch::Tensor>(t) : std::nullopt;
}

// Cool-SD's w at depth 1 .. levels of each row's draft length [B, levels] float64 (past a row's length, its
// last weight: cool_weights_at's clamp), for the fused walk: made once per (lengths, levels), kept in the rule.
torch::Tensor cool_weight_table(const ChainRule& rule, const std::vector<int64_t>& lengths, int64_t levels,
                                const torch::Device& device) {
  auto key = lengths;
  key.push_back(levels);
  if (auto it = rule.cool_tables.find(key); it != rule.cool_tables.end()) return it->second;
  if (rule.cool_tables.size() >= 64) rule.cool_tables.clear();
  const auto& params = rule.params;
  const int64_t B = int64_t(lengths.size()), W = std::max<int64_t>(levels, 1);
  std::vector<double> table;
  table.reserve(size_t(B * W));
  for (int64_t length : lengths) {
    const auto w = cool_weights(params, std::max<int64_t>(length, 1));
    for (int64_t d = 0; d < W; ++d) table.push_back(w[size_t(std::min<int64_t>(d, int64_t(w.size()) - 1))]);
  }
  RECORD_FUNCTION("vispec::host_upload", std::vector<c10::IValue>());  // counted by traces and profiles
  return rule.cool_tables[key] = torch::tensor(table, torch::kFloat64).view({B, W}).to(device);
}

// A chain as the tree walk's input (kernels/tree_walk.h): node j <= G is the context after j drafts,
// node j + 1 (draft j) its one child while j < count. Walking it is the chain rule: accept draft j against
// p_j and q_j (Cool-SD's weight at depth j + 1), at the first rejection resample at that position, and where
// no draft is left (all accepted, or count reached) draw the bonus token of p there. p_or_target: the
// target's distributions [B, G + 1, V], or its argmax [B, G + 1] when greedy.
ChainVerdict fused_chain(const ChainRule& rule, const torch::Tensor& p_or_target, bool greedy, const torch::Tensor& q,
                         const torch::Tensor& drafts, const torch::Tensor& count, const ChainUniforms& u) {
  const int64_t B = drafts.size(0), G = drafts.size(1);
  const auto device = drafts.device();
  const auto x = i64(drafts);
  const auto j = torch::arange(G + 1, x.options()).view({1, G + 1});
  const auto children = torch::where(j < i64(count).to(device).view({B, 1}), j + 1, -1).unsqueeze(-1);
  const auto token = torch::cat({torch::zeros({B, 1}, x.options()), x}, 1);
  const auto depth = j.expand({B, G + 1}).contiguous();
  const auto& a = rule.params;
  const auto weights = a.rule == AcceptRule::kCoolSd
                           ? cool_weight_table(rule, std::vector<int64_t>(size_t(B), rule.length), G, device)
                           : torch::Tensor();
  const bool nn = a.needs_neighbours() && !greedy;
  const auto node_q = greedy ? torch::Tensor() : q.to(p_or_target.scalar_type());
  const auto q_slot = greedy ? torch::Tensor() : j.clamp_max(G - 1).expand({B, G + 1}).contiguous();
  auto [path, accepted, next, sampled, tried] = kernels::tree_walk(
      greedy ? std::nullopt : optional(p_or_target), greedy ? optional(i64(p_or_target)) : std::nullopt, token, depth,
      children, optional(node_q), optional(q_slot), optional(nn ? rule.neighbours : torch::Tensor()), optional(weights),
      torch::full({B}, G + 1, x.options()),
      u.accept.defined() ? optional(u.accept.to(device).view({B, G, 1})) : std::nullopt, optional(u.resample),
      optional(u.sample), G, int64_t(a.rule), nn ? a.k : 0, a.delta, a.lambda, a.optimal_resampling);
  return {accepted, next};
}

// Whether the chain rule runs as the fused walk: where the fused operators run, for chains of one draft or more,
// under a rule the walk implements (every rule but GSD's).
bool fused_chains(const ChainRule& rule, const torch::Tensor& drafts) {
  return rule.params.rule != AcceptRule::kGsd && drafts.size(1) > 0 &&
         kernels::use_fused(drafts.device(), torch::kFloat32);
}
}  // namespace

ChainRule chain_rule(const AcceptanceParams& params, const CodebookNeighbours* neighbours, int64_t length,
                     torch::Device device) {
  ChainRule rule{params, torch::Tensor(), length};
  if (params.needs_neighbours()) {
    VISPEC_ASSERT(neighbours, "LANTERN rules need the codebook neighbour table");
    rule.neighbours = neighbours->tensor(device);
    rule.params.k = std::min(rule.params.k, neighbours->columns());
  }
  return rule;
}

ChainUniforms chain_uniforms(const DecodeState& rows, int64_t G, const ChainRule& rule, bool greedy,
                             const torch::Tensor& cells) {
  ChainUniforms u;
  const bool accept = !greedy || rule.params.rule == AcceptRule::kCoolSd;
  if (!accept && greedy) return u;
  const auto at = cells.defined() ? cells : rows.positions(0, G + 1);  // the accept draws read the first G
  if (accept) u.accept = rows.uniforms(at.narrow(1, 0, G), Purpose::kAccept);
  if (!greedy) {
    u.resample = rows.uniforms(at, Purpose::kResample);
    u.sample = rows.uniforms(at, Purpose::kSample);
  }
  return u;
}

ChainVerdict verify_chain(const ChainRule& rule, const torch::Tensor& p, const torch::Tensor& q,
                          const torch::Tensor& drafts, const torch::Tensor& count, const ChainUniforms& u) {
  if (fused_chains(rule, drafts)) return fused_chain(rule, p, false, q, drafts, count, u);
  const int64_t B = drafts.size(0), G = drafts.size(1), V = p.size(-1);
  const auto x = i64(drafts);
  const bool nn = rule.params.needs_neighbours();
  const auto flat_x = x.reshape(-1);
  const auto prob =
      accept_probabilities(p.narrow(1, 0, G).reshape({B * G, V}), q.reshape({B * G, V}), flat_x,
                           chain_depths(B, G, x.device()), rule.length, rule.params,
                           nn ? rule.neighbours.index_select(0, flat_x) : torch::Tensor(), rule.embeddings)
          .view({B, G});
  const auto a = leading_run(u.accept.to(prob.device()).lt(prob).logical_and(within_count(count, G)));
  // Where each row stopped: the rejected draft (a < count), else the bonus position after its drafts.
  const auto rejected = a.lt(i64(count));
  const auto last = a.clamp_max(G - 1);
  const auto p_a = at_index(p, a), x_a = at_index(x, last);
  const auto rejection = rejection_distributions(p_a, at_index(q, last), x_a, a + 1, rule.length, rule.params,
                                                 nn ? rule.neighbours.index_select(0, x_a) : torch::Tensor());
  const auto dist = torch::where(rejected.view({B, 1}), rejection, p_a.to(torch::kFloat64));
  const auto uu = torch::where(rejected, at_index(u.resample, a), at_index(u.sample, a));
  return {a, sample_from_probs(dist, uu), prob};
}

ChainVerdict verify_chain_greedy(const ChainRule& rule, const torch::Tensor& target, const torch::Tensor& drafts,
                                 const torch::Tensor& count, const ChainUniforms& u) {
  if (fused_chains(rule, drafts)) return fused_chain(rule, target, true, torch::Tensor(), drafts, count, u);
  const int64_t B = drafts.size(0), G = drafts.size(1);
  auto ok = i64(drafts).eq(target.narrow(1, 0, G)).logical_and(within_count(count, G));
  if (rule.params.rule == AcceptRule::kCoolSd) {  // a weight below 1 accepts a match only by chance
    const auto prob =
        greedy_accept_probabilities(ok.reshape(-1), chain_depths(B, G, ok.device()), rule.length, rule.params);
    ok = u.accept.to(prob.device()).lt(prob.view({B, G}));
  }
  const auto a = leading_run(ok);
  return {a, at_index(i64(target), a)};
}

CellVerdict verify_cells(const ChainRule& rule, const torch::Tensor& p, const torch::Tensor& q, const torch::Tensor& x,
                         const torch::Tensor& u_accept, const torch::Tensor& u_resample) {
  const int64_t M = x.numel(), V = p.size(-1);
  const auto flat = i64(x).reshape(-1);
  const auto depth = torch::ones_like(flat);
  const auto nn = rule.params.needs_neighbours() ? rule.neighbours.index_select(0, flat) : torch::Tensor();
  const auto pm = p.reshape({M, V}), qm = q.reshape({M, V});
  const auto prob = accept_probabilities(pm, qm, flat, depth, rule.length, rule.params, nn, rule.embeddings);
  const auto kept = u_accept.reshape(-1).to(prob.device()).lt(prob);
  const auto fresh = sample_from_probs(rejection_distributions(pm, qm, flat, depth, rule.length, rule.params, nn),
                                       u_resample.reshape(-1));
  return {kept.view_as(x), torch::where(kept, flat, fresh).view_as(x)};
}

TreeUniforms tree_uniforms(const DecodeState& rows, int64_t levels, int64_t slots, const ChainRule& rule, bool greedy,
                           const torch::Tensor& cells) {
  const int64_t B = rows.batch(), L = levels, C = slots;
  // Level l's children, and the token that may end the walk there, sit at raster index n + l (the root's + l + 1).
  const auto at = cells.defined() ? cells : rows.positions(0, L + 1);
  TreeUniforms u;
  u.levels = L;
  if (!greedy || rule.params.rule == AcceptRule::kCoolSd) {
    const auto pos = at.narrow(1, 0, L).unsqueeze(-1).expand({B, L, C}).reshape({B, L * C});
    const auto draws = torch::arange(C, at.options()).repeat({L}).view({1, L * C}).expand({B, L * C}).contiguous();
    u.accept = rows.uniforms(pos, Purpose::kAccept, draws).view({B, L, C});
  }
  if (!greedy) {
    u.resample = rows.uniforms(at, Purpose::kResample);
    u.sample = rows.uniforms(at, Purpose::kSample);
  }
  return u;
}

namespace {
// A rule evaluated at each row's own draft length (ADT-Tree's trees differ per row; only Cool-SD's weights
// read the length): one call per distinct length, not per row.
template <typename Rule>
torch::Tensor at_row_lengths(const std::vector<int64_t>& lengths, AcceptRule rule, Rule&& fn) {
  std::vector<int64_t> distinct(lengths);
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (rule != AcceptRule::kCoolSd || distinct.size() == 1) return fn(distinct.front());
  torch::Tensor out;
  const auto row_length = torch::tensor(lengths, torch::kInt64);
  for (int64_t length : distinct) {
    const auto r = fn(length);
    const auto here = row_length.eq(length)
                          .to(r.device())
                          .view(r.dim() == 1 ? std::vector<int64_t>{-1} : std::vector<int64_t>{-1, 1});
    out = out.defined() ? torch::where(here, r, out) : r;
  }
  return out;
}

// Each row's current node's children [B, C] (-1: none).
torch::Tensor children_of(const TreeTables& tree, const torch::Tensor& node) {
  const int64_t B = node.size(0), C = tree.children.size(2);
  return tree.children.gather(1, node.view({B, 1, 1}).expand({B, 1, C})).squeeze(1);
}

torch::Tensor node_values(const torch::Tensor& table, const torch::Tensor& node) {  // table [B, T] at node [B]
  return table.gather(1, node.clamp_min(0).view({-1, 1})).squeeze(1);
}
thread_local bool device_shaped_walks = false;

// Whether a walk over t may take the CPU's shortcuts (DeviceShapedWalks).
bool cpu_shortcuts(const torch::Tensor& t) { return t.device().is_cpu() && !device_shaped_walks; }

// Whether any entry of a bool tensor may be set: read where reading is free (a CPU tensor; the walk then stops
// testing when no row is left), assumed on a device, where the walk keeps its fixed shape and never waits.
// The CPU read goes through memory, not item(): nothing waits, so it is not a host read in the op counts.
bool may_hold(const torch::Tensor& flags) { return !cpu_shortcuts(flags) || *flags.any().data_ptr<bool>(); }

// pc [B, V] with each rejected row replaced by its rule's rejection distribution against q_hat. On a device
// every row is computed and a select keeps the shape fixed (nothing waits); on the CPU, where reading which
// rows were rejected is free, only those rows are (LANTERN's rule makes some two dozen vocabulary-wide passes).
torch::Tensor after_rejections(const ChainRule& rule, const torch::Tensor& pc, const torch::Tensor& q_hat,
                               const torch::Tensor& x, const torch::Tensor& depth, const torch::Tensor& near,
                               const std::vector<int64_t>& lengths, const torch::Tensor& rejected) {
  auto rejection = [&](const torch::Tensor& p, const torch::Tensor& q, const torch::Tensor& xs, const torch::Tensor& ds,
                       const torch::Tensor& nn, const std::vector<int64_t>& ls) {
    return at_row_lengths(ls, rule.params.rule, [&](int64_t length) {
      return rejection_distributions(p, q, xs, ds, length, rule.params, nn);
    });
  };
  const int64_t B = pc.size(0);
  if (!cpu_shortcuts(pc)) return torch::where(rejected.view({B, 1}), rejection(pc, q_hat, x, depth, near, lengths), pc);
  const auto rows = rejected.nonzero().view(-1);
  const int64_t R = rows.size(0);
  if (R == 0) return pc;
  if (R == B) return rejection(pc, q_hat, x, depth, near, lengths);
  std::vector<int64_t> row_lengths;
  for (int64_t i = 0; i < R; ++i) row_lengths.push_back(lengths[size_t(rows.data_ptr<int64_t>()[i])]);
  auto pick = [&](const torch::Tensor& t) { return t.defined() ? t.index_select(0, rows) : t; };
  return pc.index_copy(0, rows, rejection(pick(pc), pick(q_hat), pick(x), pick(depth), pick(near), row_lengths));
}

// What both walks carry from level to level: each row's node, its path so far, and how its walk ended.
struct TreeWalk {
  torch::Tensor node, accepted, tried, next, sampled, live, limit;
  std::vector<torch::Tensor> path;

  TreeWalk(int64_t B, const torch::TensorOptions& opts, const torch::Tensor& row_limit)
      : node(torch::zeros({B}, opts)), accepted(torch::zeros({B}, opts)), tried(torch::zeros({B}, opts)),
        next(torch::zeros({B}, opts)), sampled(torch::zeros({B}, opts.dtype(torch::kBool))), live(i64(row_limit).gt(0)),
        limit(i64(row_limit)), path{node} {}

  // A level's outcome: live rows that accepted `chosen` (found) move on to it, until their limit; the other
  // live rows end here with `token`.
  void step(const torch::Tensor& found, const torch::Tensor& chosen, const torch::Tensor& token) {
    const auto ends = live.logical_and(found.logical_not());
    next = torch::where(ends, token, next);
    sampled = sampled.logical_or(ends);
    const auto moved = live.logical_and(found);
    accepted += i64(moved);
    node = torch::where(moved, chosen, node);
    path.push_back(torch::where(moved, chosen, torch::full_like(chosen, -1)));
    live = moved.logical_and(accepted.lt(limit));
  }
  bool any_live() const { return may_hold(live); }
  // Levels never reached leave -1 in the path.
  TreeVerdict verdict(int64_t levels) const {
    auto p = torch::stack(path, 1);
    if (p.size(1) < levels + 2)
      p = torch::cat({p, torch::full({p.size(0), levels + 2 - p.size(1)}, -1, p.options())}, 1);
    return {p, accepted, next, sampled, tried};
  }
};
}  // namespace

TreeVerdict verify_tree(const ChainRule& rule, const torch::Tensor& p, const TreeTables& tree,
                        const torch::Tensor& node_q, const torch::Tensor& q_slot, const std::vector<int64_t>& lengths,
                        const torch::Tensor& limit, const TreeUniforms& u) {
  const int64_t B = p.size(0), V = p.size(-1), L = u.levels, C = tree.children.size(2);
  const bool nn = rule.params.needs_neighbours();
  TreeWalk w(B, tree.token.options(), limit);
  for (int64_t l = 0; l <= L && w.any_live(); ++l) {
    auto pc = at_index(p, w.node).to(torch::kFloat64);  // p at the node, less what its rejected children took
    torch::Tensor q_left;                               // the node's q, less its rejected children
    if (node_q.defined()) q_left = at_index(node_q, node_values(q_slot, w.node).clamp_min(0)).to(torch::kFloat64);
    auto found = torch::zeros_like(w.live), has_children = torch::zeros_like(w.live);
    auto chosen = w.node;
    const auto kids = l < L ? children_of(tree, w.node) : torch::Tensor();
    for (int64_t c = 0; l < L && c < C; ++c) {
      const auto child = kids.select(1, c);
      const auto valid = w.live.logical_and(child.ge(0)).logical_and(found.logical_not());
      has_children = has_children.logical_or(child.ge(0));
      if (!may_hold(valid)) break;
      const auto x = node_values(tree.token, child), depth = node_values(tree.depth, child);
      const auto q_hat =
          q_left.defined()
              ? q_left / q_left.sum(-1, true).clamp_min(std::numeric_limits<double>::min())
              // (not torch::one_hot: off CUDA it reads x's range back to check it)
              : torch::zeros({x.size(0), V}, pc.options().dtype(torch::kFloat64)).scatter_(1, x.view({-1, 1}), 1.0);
      const auto near = nn ? rule.neighbours.index_select(0, x) : torch::Tensor();
      const auto prob = at_row_lengths(lengths, rule.params.rule, [&](int64_t length) {
        return accept_probabilities(pc, q_hat, x, depth, length, rule.params, near);
      });
      const auto ok = valid.logical_and(u.accept.select(1, l).select(1, c).to(prob.device()).lt(prob));
      const auto rejected = valid.logical_and(ok.logical_not());
      found = found.logical_or(ok);
      chosen = torch::where(ok, child, chosen);
      pc = after_rejections(rule, pc, q_hat, x, depth, near, lengths, rejected);
      if (q_left.defined())  // the next sibling was drawn without this one
        q_left = q_left.scatter(1, x.view({B, 1}),
                                torch::where(rejected.view({B, 1}), torch::zeros({B, 1}, q_left.options()),
                                             q_left.gather(1, x.view({B, 1}))));
      w.tried += i64(valid);
    }
    // Every child rejected (pc is the rejection distribution), or a leaf (pc is the target's p): sample.
    const auto uu = torch::where(has_children, u.resample.select(1, l), u.sample.select(1, l));
    w.step(found, chosen, sample_from_probs(pc, uu));
  }
  return w.verdict(L);
}

TreeVerdict verify_tree_greedy(const ChainRule& rule, const torch::Tensor& target, const TreeTables& tree,
                               const std::vector<int64_t>& lengths, const torch::Tensor& limit, const TreeUniforms& u) {
  const int64_t B = target.size(0), C = tree.children.size(2);
  const int64_t L = u.levels;
  const auto slots = torch::arange(C, tree.token.options()).view({1, C});
  TreeWalk w(B, tree.token.options(), limit);
  for (int64_t l = 0; l <= L && w.any_live(); ++l) {
    const auto want = node_values(i64(target), w.node);  // the target's argmax after the node
    auto found = torch::zeros_like(w.live);
    auto chosen = w.node;
    if (l < L) {
      const auto kids = children_of(tree, w.node);
      const auto is_child = kids.ge(0);
      const auto match = is_child.logical_and(tree.token.gather(1, kids.clamp_min(0)).eq(want.view({B, 1})));
      const auto slot = i64(match).argmax(1);  // the first match (drafted siblings are distinct tokens)
      found = match.any(1);
      chosen = kids.gather(1, slot.view({B, 1})).squeeze(1);
      if (rule.params.rule == AcceptRule::kCoolSd) {  // a weight below 1 accepts the match only by chance
        const auto prob = at_row_lengths(lengths, rule.params.rule, [&](int64_t length) {
          return greedy_accept_probabilities(found, node_values(tree.depth, chosen), length, rule.params);
        });
        const auto u_slot = u.accept.select(1, l).gather(1, slot.view({B, 1})).squeeze(1).to(prob.device());
        found = found.logical_and(u_slot.lt(prob));
      }
      found = w.live.logical_and(found);
      // Children tested: up to the accepted one, else all of them.
      const auto tested = torch::where(found.view({B, 1}), slots.le(slot.view({B, 1})), is_child);
      w.tried += torch::where(w.live, i64(is_child.logical_and(tested)).sum(1), torch::zeros_like(w.tried));
    }
    w.step(found, chosen, want);
  }
  return w.verdict(L);
}

DeviceShapedWalks::DeviceShapedWalks() : set_(device_shaped_walks) {}

namespace {
// The walk as one operator (kernels/tree_walk.h): one CUDA block per row, or its CPU reference.
TreeVerdict fused_walk(const ChainRule& rule, const SamplingParams& params, const TreeTables& tree,
                       const torch::Tensor& logits, const std::vector<int64_t>& lengths, int64_t levels,
                       const torch::Tensor& node_q, const torch::Tensor& q_slot, const torch::Tensor& limit,
                       const TreeUniforms& u) {
  const auto& a = rule.params;
  torch::Tensor p, target, q;
  if (params.greedy()) target = greedy_tokens(logits);
  else p = target_probs(logits, params);
  if (p.defined() && node_q.defined()) q = node_q.to(p.scalar_type());
  const auto weights =
      a.rule == AcceptRule::kCoolSd ? cool_weight_table(rule, lengths, levels, logits.device()) : torch::Tensor();
  const auto neighbours = a.needs_neighbours() && p.defined() ? rule.neighbours : torch::Tensor();
  auto [path, accepted, next, sampled, tried] =
      kernels::tree_walk(optional(p), optional(target), tree.token, tree.depth, tree.children, optional(q),
                         q.defined() ? optional(q_slot) : std::nullopt, optional(neighbours), optional(weights),
                         i64(limit), optional(u.accept), optional(u.resample), optional(u.sample), levels,
                         int64_t(a.rule), neighbours.defined() ? a.k : 0, a.delta, a.lambda, a.optimal_resampling);
  return {path, accepted, next, sampled, tried};
}
}  // namespace

TreeVerdict walk_trees(const DecodeState& rows, const ChainRule& rule, const SamplingParams& params,
                       const TreeTables& tree, const torch::Tensor& logits, const std::vector<int64_t>& lengths,
                       int64_t levels, const torch::Tensor& node_q, const torch::Tensor& q_slot,
                       const torch::Tensor& cells) {
  VISPEC_ASSERT(rule.params.rule != AcceptRule::kGsd, "GSD's grouped rule verifies chains only");
  const auto u = tree_uniforms(rows, levels, tree.children.size(2), rule, params.greedy(), cells);
  const auto limit = rows.cells() - rows.n;  // drafts each row may still accept: the cells after its root
  if (kernels::use_fused(logits.device(), torch::kFloat32))
    return fused_walk(rule, params, tree, logits, lengths, levels, node_q, q_slot, limit, u);
  return params.greedy() ? verify_tree_greedy(rule, greedy_tokens(logits), tree, lengths, limit, u)
                         : verify_tree(rule, target_probs(logits, params), tree, node_q, q_slot, lengths, limit, u);
}

void commit_chain(torch::Tensor& tokens, const torch::Tensor& n, int64_t N, const torch::Tensor& drafts,
                  const ChainVerdict& verdict) {
  const int64_t B = drafts.size(0), G = drafts.size(1);
  const auto j = torch::arange(G + 1, n.options().dtype(torch::kInt64)).view({1, G + 1});
  const auto cols = i64(n).view({B, 1}) + j;  // [B, G + 1]
  auto values = torch::cat({i64(drafts), torch::zeros({B, 1}, n.options().dtype(torch::kInt64))}, 1);
  values.scatter_(1, verdict.accepted.view({B, 1}), verdict.next.view({B, 1}));
  const auto keep = j.le(verdict.accepted.view({B, 1})).logical_and(cols.lt(N));
  tokens.scatter_(1, cols, torch::where(keep, values, tokens.gather(1, cols)));
}

}  // namespace vispec
