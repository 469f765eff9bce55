// EAGLE-2 (Li et al. 2024) on an image raster, as LANTERN's LlamaGen port runs it
// (docs/algorithms.md "EAGLE-2 and LANTERN"):
//
//   catch up  the drafter reads the new pairs (feature_t, token_t): features are the target's post-norm
//             states at the accepted positions, both CFG streams, the same tokens (decoding/common/eagle_drafter_state)
//   build     from the drafter's guided log-probs after the root (the newest committed token), EAGLE-2's
//             dynamic tree (decoding/common/draft_tree: top-k, `depth` expansions, rerank to total_tokens), grown and
//             laid out on the device
//   verify    ONE target forward over [root, tree nodes] under the tree's ancestor mask
//   walk      from the root: try the children best-first; child x is accepted with rule(p, 1_x, x, depth)
//             (drafts are deterministic top-k picks, so q(x) := 1); on rejection p becomes the rule's
//             rejection distribution (exact: p without x, renormalised) and the next child is tried; when
//             every child is rejected, or at a leaf, the next token is sampled from the current p
//             (decoding/common/verify's tree walk: every row at once, one read of the paths per iteration)
//   keep      the root and accepted nodes' entries in the target cache; the sampled token is the new root
// Everything up to the walk's one read touches only the device (IterationLoop::device_half), so on a GPU a steady
// iteration is replayed as one CUDA graph (decoding/common/iteration_graphs.h); ADT-Tree's rows' shapes are
// uploaded before it, and its graphs are keyed by the widest of them.
// With the exact rule this samples the target exactly (each child is accepted with its current residual
// probability: sequential sampling without replacement); at temperature 0 it gives AR's greedy tokens.
// Randomness per (seed, sample id, position): kSample for the first root and bonus tokens, kAccept (draw =
// child rank) for tests, kResample after every child was rejected.
#include "decoding/eagle2.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "core/check.h"
#include "core/rng.h"
#include "decoding/common/decode_state.h"
#include "decoding/common/eagle_drafter_state.h"
#include "decoding/common/iteration_loop.h"
#include "decoding/common/verify.h"

namespace vispec {
namespace {
// What the rows' tree shapes fix on the host, taken from the shapes and not from the trees drawn, so that the
// walk's operators are the same whatever trees the drafter grew (a level without children ends the walk as a
// leaf does).
struct TreeBounds {
  std::vector<int64_t> lengths;  // per row: its draft length, depth + 1 (a node's depth is at most that)
  int64_t levels = 0;            // the walk's levels: the longest draft
  int64_t slots = 1;             // child slots per node: the widest top_k
  int64_t expansions = 0;        // drafter forwards that grow a level: the deepest shape's depth

  static TreeBounds of(const std::vector<TreeShape>& shapes) {
    TreeBounds t;
    for (const auto& s : shapes) {
      t.lengths.push_back(s.depth + 1);
      t.levels = std::max(t.levels, s.depth + 1);
      t.slots = std::max(t.slots, s.top_k);
      t.expansions = std::max(t.expansions, s.depth);
    }
    return t;
  }
  // The iteration body's host numbers: the widest top_k and depth (its blocks' sizes), the walk's levels and each
  // row's draft length (Cool-SD's weights). ADT-Tree's rows' own shapes are on the device.
  StepKey key() const {
    StepKey k{slots, levels};
    k.insert(k.end(), lengths.begin(), lengths.end());
    return k;
  }
  // Each expansion's drafter block: the widest top_k more nodes.
  std::vector<int64_t> drafter_widths() const {
    std::vector<int64_t> widths;
    for (int64_t level = 1; level <= expansions; ++level) widths.push_back(slots * level);
    return widths;
  }
};

// Every row's tree shape: EAGLE-2's fixed one, or ADT-Tree's, which its policy moves with each tree (the policy
// starts again with each sample a row takes). On the device too, so that growing a tree uploads nothing.
class RowTreeShapes {
 public:
  RowTreeShapes(const TreeShape& shape, const std::optional<AdtParams>& adt, int64_t rows, int64_t grid)
      : shape_(shape), adt_(adt), grid_(grid), shapes_(static_cast<size_t>(rows), shape) {
    if (adt_)
      for (int64_t b = 0; b < rows; ++b) policies_.emplace_back(*adt_, shape_, grid_);
  }
  // The largest shape any tree may take (ADT-Tree moves within its bounds), which sizes the drafter's blocks.
  TreeShape widest() const {
    if (!adt_) return shape_;
    return {std::max(shape_.depth, adt_->max_depth), std::max(shape_.top_k, adt_->max_k), shape_.total_tokens};
  }
  // The shapes' device table, a buffer of the decode state ([rows, 3] int64), written once here.
  void place(const torch::Tensor& own) {
    own_ = own;
    own_.copy_(tree_shape_table(shapes_));
  }
  void restart(const std::vector<int64_t>& rows) {
    if (!adt_) return;
    for (int64_t b : rows) {
      policies_[size_t(b)] = AdtPolicy(*adt_, shape_, grid_);
      shapes_[size_t(b)] = shape_;
    }
  }
  // Before an iteration: each active row's shape for the tree rooted at root_index (the host's copy), uploaded
  // before the iteration's graph, which reads them.
  void next(const std::vector<int64_t>& active, const std::vector<int64_t>& root_index) {
    if (!adt_) return;
    for (int64_t b : active) shapes_[size_t(b)] = policies_[size_t(b)].next(root_index[size_t(b)]);
    upload_to(own_, tree_shape_table(shapes_));
  }
  // After it: what each active row's tree accepted (`paths`, root first), for its policy and its statistics.
  void record(const std::vector<int64_t>& active, const std::vector<int64_t>& root_index,
              const std::vector<std::vector<int64_t>>& paths, DecodeState& rows) {
    for (int64_t b : active) {
      const auto& shape = shapes_[size_t(b)];
      if (adt_) policies_[size_t(b)].record(root_index[size_t(b)], shape, int64_t(paths[size_t(b)].size()) - 1);
      rows.stats_of(b).tree_depth += double(shape.depth);
    }
  }
  const std::vector<TreeShape>& all() const { return shapes_; }
  const torch::Tensor& own() const { return own_; }

 private:
  TreeShape shape_;
  std::optional<AdtParams> adt_;
  int64_t grid_;
  std::vector<TreeShape> shapes_;
  std::vector<AdtPolicy> policies_;  // ADT-Tree's, per row
  torch::Tensor own_;
};
}  // namespace

Eagle2Decoder::Eagle2Decoder(std::string name, Gpt target, EagleDrafter drafter, SamplingParams params, TreeShape shape,
                             AcceptanceParams accept, std::shared_ptr<const CodebookNeighbours> neighbours,
                             std::optional<AdtParams> adt)
    : name_(std::move(name)), target_(std::move(target), params.cfg_scale), drafter_(std::move(drafter)),
      params_(params), shape_(shape), rule_(chain_rule(accept, neighbours.get(), 1, target_.gpt()->device())),
      adt_(adt) {}

TopLogProbs Eagle2Decoder::draft_top(const torch::Tensor& features, int64_t K) const {
  Gpt gpt = target_.gpt();  // a holder (image_logits is not const)
  return draft_top_log_probs(gpt->image_logits(features), target_.guided(), params_, K);
}

TreeExpandTop Eagle2Decoder::expansion(EagleDrafterState& pairs, KvCache& dcache, const torch::Tensor& catchup,
                                       const DecodeState::Span& cells, torch::Tensor& drafted) {
  const int64_t B = cells.all.size(0), R = target_.rows(B);
  return
      [&, B, R](const torch::Tensor& tok, const torch::Tensor& parent_slot, const torch::Tensor& mask, int64_t level) {
        const int64_t M = tok.size(1), K = M / (level + 1);  // K: frontier width of the block (the widest top_k)
        auto newest = [&](const torch::Tensor& x) { return x.narrow(1, M - K, K); };
        // Node m's input feature is its parent's drafter output (slot + 1 in [catch-up output; drafted]), in each
        // CFG stream: the slots are per sample, gathered from every stream's rows at once.
        auto source = drafted.defined() ? torch::cat({catchup.unsqueeze(1), drafted}, 1) : catchup.unsqueeze(1);
        const int64_t streams = R / B, D = source.size(-1);
        auto slot = (newest(parent_slot) + 1).view({1, B, K, 1}).expand({streams, B, K, D});
        auto features = source.reshape({streams, B, source.size(1), D}).gather(2, slot).view({R, K, D});
        auto node_cells = cells.at(level, 1).expand({B, K});
        auto out = pairs.draft(dcache, features, newest(tok), node_cells, newest(mask));
        drafted = drafted.defined() ? torch::cat({drafted, out}, 1) : out;
        return draft_top(out, K);
      };
}

DecodeResult Eagle2Decoder::decode(const DecodeRequest& request) {
  torch::NoGradGuard no_grad;
  Gpt gpt = target_.gpt();  // a handle (shared module), for the frozen norm, head and embedding
  const int64_t B = request.row_count(), N = gpt->config().image_tokens();
  const int64_t R = target_.rows(B);  // drafter rows: [cond; uncond] when guided
  const auto device = gpt->device();

  auto tcache = target_.make_cache(B, shape_.total_tokens, /*static_steps=*/true);
  RowTreeShapes shapes(shape_, adt_, B, gpt->config().grid_size);
  const TreeShape widest = shapes.widest();
  const int64_t W = widest.depth + 2;  // the pairs' block: an accepted path holds the root and depth + 1 nodes
  auto rows = graphs_.rows(request, N, shape_.total_tokens, device, /*path_width=*/W + 1);
  EagleDrafterState pairs(target_, tcache, drafter_, drafter_steps_, B, W);
  auto dcache = pairs.drafter_cache(widest.top_k * (widest.depth + 1) + W);
  pairs.prepare(rows, graphs_);
  IterationLoop loop(graphs_, rows, request, pairs.caches(dcache), pairs.pooled_lengths(dcache),
                     IterationLoop::Commit::kTree);
  shapes.place(graphs_.state(rows, "tree_shapes", {B, 3}, torch::TensorOptions().dtype(torch::kInt64).device(device)));
  // ---- rows taking samples (every row at the start, then each row whose image is done): the target's prefill,
  // token 0 and the first pairs; ADT-Tree's policy starts again with the sample.
  const auto start = [&](const RowFill& fill) {
    pairs.start(params_, fill, rows, dcache);
    shapes.restart(fill.rows);
  };

  loop.run(start, [&](const std::vector<int64_t>& active) {
    const auto root_index = rows.newest_index();  // the host's copy, for ADT-Tree's policy
    shapes.next(active, root_index);
    const auto bounds = TreeBounds::of(shapes.all());
    const auto& lengths = bounds.lengths;
    const int64_t levels = bounds.levels, slots = bounds.slots, expansions = bounds.expansions;

    // The iteration on the device: catch up, build, verify, walk, commit. Nothing in it reads the host.
    const auto iteration = [&] {
      // ---- catch up: the drafter reads every row's new (feature, token) pairs
      const auto catchup = pairs.catch_up(dcache, rows);  // [R, D]

      // ---- build the trees: each expansion runs only the newest level's nodes, extending the drafter's
      // pending block (their mask also covers the earlier levels' entries)
      torch::Tensor drafted;  // drafter outputs of every tree node so far [R, M_prev, D]
      // Each row's newest cell (the root's) and the cells of its tree's levels below it, on the device, once.
      // The walk's levels sit one further: offsets -1 .. depth + 1.
      const auto cells = rows.span(-1, widest.depth + 3);
      const auto root_cells = cells.at(-1, 1);  // [B, 1]
      const auto expand = expansion(pairs, dcache, catchup, cells, drafted);
      // The trees stay on the device: their verification inputs and walk tables are built there, of one width
      // (total_tokens nodes), so nothing is read or uploaded between drafting and the walk.
      const auto grown =
          grown_tree_tables(grow_dynamic_trees(draft_top(catchup, slots), shapes.all(), shapes.own(), expand),
                            rows.tokens.gather(1, root_cells).view({B}), root_cells.view({B}), shape_.total_tokens, N);
      loop.end_draft();

      // ---- verify: one target forward over every row's tree
      const auto& in = grown.inputs;
      auto vout = target_.decode_block(tcache, in.tokens, in.positions, in.mask);
      loop.end_verify();

      // ---- walk every row's tree from the root (decoding/common/verify: all rows at once), commit its path
      const auto& tables = grown.tables;
      VISPEC_ASSERT(tables.children.size(2) == slots, "the grown trees' child slots are the widest top_k");
      const auto verdict =
          walk_trees(rows, rule_, params_, tables, vout.logits, lengths, levels, {}, {}, cells.at(0, levels + 1));
      rows.commit_tree_on_device(verdict, tables.token);
      // ---- keep the accepted path in the target cache; queue its pairs for the drafter
      pairs.keep_paths(rows, verdict.path, vout.hidden);
    };
    const auto paths = loop.device_half(
        pairs.iteration_key(dcache, bounds.key(), shape_.total_tokens, bounds.drafter_widths()), iteration);
    shapes.record(active, root_index, paths, rows);
    return 1 + expansions;
  });
  return loop.result();
}

DecoderEntry eagle2_family_entry(const std::string& name, const std::string& summary, const std::string& default_rule) {
  DecoderEntry e;
  e.name = name;
  e.summary = summary;
  e.drafters = {"eagle_head"};
  e.read = [default_rule](DecoderFields& f, DecoderConfig& c) {
    TreeShape s;  // LANTERN's and ADT-Tree's LlamaGen defaults: 59 nodes, depth 4, top-k 10
    s.depth = f.whole("depth", s.depth, 0, 32);
    s.top_k = f.whole("tree_k", s.top_k, 1, 64);
    s.total_tokens = f.whole("total_tokens", s.total_tokens, 2, 1 + s.top_k + s.depth * s.top_k * s.top_k);
    c.method = Eagle2Settings{s, std::nullopt};
    read_rule(f, c, default_rule);
  };
  e.check_model = [](const DecoderConfig& c, const ModelConfig& model) {
    VISPEC_CHECK(c.settings<Eagle2Settings>().shape.top_k <= model.gpt.vocab_size, c.spec.where_of("tree_k"),
                 ": larger than the vocabulary of ", model.file, " (", model.gpt.vocab_size, ")");
  };
  e.build = [](const DecoderConfig& c, const DecoderModels& m) -> std::unique_ptr<Decoder> {
    const auto& s = c.settings<Eagle2Settings>();
    return std::make_unique<Eagle2Decoder>(c.name, m.target, m.eagle, c.sampling, s.shape, c.accept, m.neighbours,
                                           s.adt);
  };
  return e;
}

namespace {
const DecoderRegistration kEagle2Registration(eagle2_family_entry(
    "eagle2", "EAGLE-2: a feature-level draft head grows a dynamic tree, one target forward verifies it", "exact"));
const DecoderRegistration kLanternRegistration(eagle2_family_entry(
    "lantern", "LANTERN: EAGLE-2's trees, accepting drafts whose codebook neighbours carry the target's mass",
    "lantern"));
}  // namespace

}  // namespace vispec
