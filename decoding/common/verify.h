// The verification unit: the accept/reject step of the chain decoders (SD, SJD's window, SSD's first row and
// rounds) and of the tree decoders (EAGLE-1/2, LANTERN, ADT-Tree) as tensor operations over every row at once. A chain
// is a row's drafts x_1 .. x_G, verified left to right against the target distributions p_1 .. p_{G+1} that ONE forward
// gave:
//
//   accept    x_j with the rule's probability (decoding/common/acceptance.h) while u_j is below it; a = the number
//             accepted before the first rejection (or the row's whole count)
//   next      rejected at a + 1: a sample of the rule's rejection distribution at a + 1 (u: the resample
//             uniform at that position); all accepted: a bonus sample of p_{a+1} (the sample uniform)
//
// With the exact rule this is speculative sampling: the committed tokens have the target's distribution.
// Every row's uniforms for every possible a are handed in, so nothing waits for the host: the caller reads
// `accepted` once per iteration, the decoder's one synchronisation. At temperature 0 the target is its
// argmax tokens, not one-hot distributions.
//
// Wherever the fused operators run (kernels/kernel_check.h's use_fused: always on the CPU, on a GPU whose
// kernels passed their check), verify_chain, verify_chain_greedy and walk_trees run as one operator,
// kernels/tree_walk.h (a chain is a tree of one child per node); the tensor forms below are the
// composite formulas it was tested against (tests/test_tree_walk.cpp), a GPU's fallback, and the form of the
// rule the walk does not implement (GSD's, on chains only).
#pragma once

#include <torch/torch.h>

#include <map>
#include <vector>

#include "core/scoped_flag.h"
#include "decoding/common/acceptance.h"
#include "decoding/common/codebook_neighbours.h"
#include "decoding/common/decode_state.h"
#include "decoding/common/draft_tree.h"

namespace vispec {

// A row's uniforms at the positions of its drafts [B, G] (accept) and of every place its next token may land
// [B, G + 1] (resample after a rejection, sample after a full accept).
struct ChainUniforms {
  torch::Tensor accept, resample, sample;
};

struct ChainVerdict {
  torch::Tensor accepted;  // [B] int64: drafts accepted, 0 .. count
  torch::Tensor next;      // [B] int64: the token after them (meaningless where the row's image is full)
  // [B, G] float64: each draft's acceptance probability under the rule, where the tensor form ran (a rule the
  // fused walk does not implement: GSD, whose distortion bound reads it); undefined otherwise.
  torch::Tensor probability;
};

// The rule and what it reads besides p and q: the codebook's neighbour table [codes, >= k] int64 on the
// decoders' device (LANTERN rules only), the draft length Cool-SD's schedule spans, and the target's image-token
// input embeddings [V, D] (GSD's distance filter; set by the decoder that uses it).
struct ChainRule {
  AcceptanceParams params;
  torch::Tensor neighbours;
  int64_t length = 1;
  torch::Tensor embeddings;
  // Cool-SD's weight tables on the device, made and uploaded once per (row lengths, levels): a decoder's
  // iterations then upload nothing for them (at most 64 kept; ADT-Tree's shapes may ask for more).
  mutable std::map<std::vector<int64_t>, torch::Tensor> cool_tables;
};
// neighbours: the codebook's table (may be null unless the rule is a LANTERN one).
ChainRule chain_rule(const AcceptanceParams& params, const CodebookNeighbours* neighbours, int64_t length,
                     torch::Device device);

// The uniforms a chain of G drafts after each row's newest token reads: accept at n + j (j < G), resample and
// sample at n + j (j <= G), keyed by (seed, sample id, position, purpose) like every draw. Greedy chains
// read only Cool-SD's accept uniforms; the rest stay undefined.
// cells: the positions n .. n + G of every row ([B, G + 1], rows.positions(0, G + 1)) where the caller has them.
ChainUniforms chain_uniforms(const DecodeState& rows, int64_t G, const ChainRule& rule, bool greedy,
                             const torch::Tensor& cells = {});

// Sampling: p [B, G + 1, V] the target's processed distributions, q [B, G, V] the drafts', drafts [B, G],
// count [B] the drafts that take part (those past a row's image end never are).
ChainVerdict verify_chain(const ChainRule& rule, const torch::Tensor& p, const torch::Tensor& q,
                          const torch::Tensor& drafts, const torch::Tensor& count, const ChainUniforms& u);
// Temperature 0: target [B, G + 1] the target's argmax tokens; only u.accept is read (Cool-SD's weights
// below 1 accept a match by chance).
ChainVerdict verify_chain_greedy(const ChainRule& rule, const torch::Tensor& target, const torch::Tensor& drafts,
                                 const torch::Tensor& count, const ChainUniforms& u);

// SSD's verify-and-correct rounds: cells [B, T] each verified on its own against its p [B, T, V] (depth 1 of
// the rule's chain): kept with the rule's probability (u_accept [B, T] below it), else replaced by a sample of
// the rule's rejection distribution (u_resample). Nothing is rolled back: a rejected cell's followers are
// verified in the same round against contexts that held the rejected token.
struct CellVerdict {
  torch::Tensor kept;    // [B, T] bool
  torch::Tensor tokens;  // [B, T] int64: the kept token or its replacement
};
CellVerdict verify_cells(const ChainRule& rule, const torch::Tensor& p, const torch::Tensor& q, const torch::Tensor& x,
                         const torch::Tensor& u_accept, const torch::Tensor& u_resample);

// ---- Tree walks (EAGLE-1/2, LANTERN, ADT-Tree) over every row's tree as tensors (TreeTables, draft_tree.h).
// The accept uniforms of a walk [B, L, C] (level l tests the children of the node at raster index r + l,
// draw = child slot) and the uniforms of the token that ends it [B, L + 1] (resample after rejected
// children, sample at a leaf), r = each row's root: its newest token, at n - 1 in the decode state. Keyed by
// (seed, sample id, position, purpose) like every draw; greedy walks read only Cool-SD's accept uniforms.
struct TreeUniforms {
  int64_t levels = 0;  // L: the deepest node's depth
  torch::Tensor accept, resample, sample;
};
// cells: the positions n .. n + L of every row ([B, L + 1], rows.positions(0, L + 1)) where the caller has them.
TreeUniforms tree_uniforms(const DecodeState& rows, int64_t levels, int64_t slots, const ChainRule& rule, bool greedy,
                           const torch::Tensor& cells = {});

struct TreeVerdict {
  torch::Tensor path;      // [B, L + 1] int64: the accepted nodes, root first, -1 after the last
  torch::Tensor accepted;  // [B] int64: drafts accepted (path length - 1)
  torch::Tensor next;      // [B] int64: the token sampled after the path (only where `sampled`)
  torch::Tensor sampled;   // [B] bool: false where the path reached the image's last cell
  torch::Tensor tried;     // [B] int64: children tested (the drafted statistic)
};

// The walk from each root: at the current node its children in slot order; child x is accepted with the rule's
// probability against q^, the drafter's probability of x given the siblings already rejected; on rejection p
// becomes the rule's rejection distribution against q^ and the next child is tried; when every child is
// rejected, or at a leaf, the next token is sampled from p. q^: with node_q [B, S, V] (the drafter's q at the
// tree's nodes, q_slot [B, T] the slot of each node, -1 for leaves) the node's q without the rejected
// siblings, renormalised (EAGLE-1's draws without replacement); undefined node_q: one-hot at x (EAGLE-2's
// deterministic top-k drafts). p [B, T, V] the target's processed distributions at the nodes; limit [B] the
// drafts a row may still accept (cells left after its root); lengths: each row's draft length (Cool-SD).
// One pass per level and child slot, over all rows at once.
TreeVerdict verify_tree(const ChainRule& rule, const torch::Tensor& p, const TreeTables& tree,
                        const torch::Tensor& node_q, const torch::Tensor& q_slot, const std::vector<int64_t>& lengths,
                        const torch::Tensor& limit, const TreeUniforms& u);
// Temperature 0: target [B, T] the target's argmax at every node; a child is accepted where it is that
// argmax (Cool-SD: with probability min(1, w_depth), u.accept), and the walk ends on the argmax.
TreeVerdict verify_tree_greedy(const ChainRule& rule, const torch::Tensor& target, const TreeTables& tree,
                               const std::vector<int64_t>& lengths, const torch::Tensor& limit, const TreeUniforms& u);
// The walk of every row's tree from its newest token (the root): the walk's uniforms, then verify_tree at T > 0
// or verify_tree_greedy at T = 0 on the verification forward's guided logits [B, T, V], each row accepting no
// draft past its image. levels: the deepest depth a node may have (deeper than the tree's deepest node walks
// the same path: a level without children ends the walk as a leaf does); the rest as verify_tree.
// On the CPU the walks stop testing once no row is left and compute rejection distributions only for the
// rejected rows (reading which is free there); on a device they keep a fixed shape and never wait. While a
// DeviceShapedWalks is alive, this thread's CPU walks take the device's shape too, so that a test on the CPU
// counts the operators a GPU iteration issues.
class DeviceShapedWalks {
 public:
  DeviceShapedWalks();

 private:
  ScopedFlag set_;
};

TreeVerdict walk_trees(const DecodeState& rows, const ChainRule& rule, const SamplingParams& params,
                       const TreeTables& tree, const torch::Tensor& logits, const std::vector<int64_t>& lengths,
                       int64_t levels, const torch::Tensor& node_q = {}, const torch::Tensor& q_slot = {},
                       const torch::Tensor& cells = {});  // tree_uniforms' cells

// Writes each row's accepted drafts and next token into tokens [B, >= N + G + 1] at columns n[b] ..
// n[b] + accepted[b] (the padding beyond N takes what falls past the image); rows with n[b] >= N are left as
// they are. n [B] int64 on the tokens' device.
void commit_chain(torch::Tensor& tokens, const torch::Tensor& n, int64_t N, const torch::Tensor& drafts,
                  const ChainVerdict& verdict);

}  // namespace vispec
