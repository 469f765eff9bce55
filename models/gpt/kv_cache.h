// A static, preallocated key/value cache (post-RoPE keys, as in LlamaGen's gpt-fast cache).
//
// Each batch row holds `length(row)` committed entries. A forward appends a *pending* block of T entries after
// them, attending under an arbitrary [T, T] block mask (causal, tree, parallel verification). The decoder then
// decides what stays: advance() (the whole block: AR), keep_paths(indices) (accepted tree paths, compacted in
// order), advance(counts) (accepted chain prefixes, where they are; a negative count drops committed entries), or
// nothing (the next block overwrites the pending one).
// A forward whose block mask is wider than its entries adds them to the pending block instead (a draft tree grown
// level by level runs only its new nodes; their mask also covers the block's earlier entries).
// By default a block sees every committed entry; its KvBlock may narrow that (ZipAR commits entries out of raster
// order, so a query may only see those at earlier raster positions), and a prefill's may hide some of each row's
// first entries from every later query (a caption's padding).
// A block may hold more entries than the decoder fed tokens: where each image row ends in a forced end-of-line
// token (models/gpt/sequence_layout.h) the model adds that token's entry after a row's last token. The model then
// tells the cache which entries each fed token ("node") owns (KvBlock::node_starts), and every commit, which
// names nodes, keeps their entries.
// The static step (docs/decoding_common.md, "The static step"): in a static cache (KvLengths) the committed lengths
// live in a device tensor, the only truth: every commit moves them there, and a block writes at slots computed
// from them and attends over a fixed-width view of the cache (the length bucket: the longest row plus the
// block, rounded up to kLengthBucket keys) masked by each row's length. A forward then has the same operators,
// shapes and scalars at every step of a bucket and reads nothing from the host, which is what a CUDA graph
// (models/gpt/step_graph.h) replays. The host keeps a plan of the lengths, which picks the buckets: exact where
// a decoder read them back (settle) or knew them, an upper bound in between. A static block may extend the
// pending block and restrict the committed entries as a dynamic one does.
// The cache knows nothing of sampling or acceptance (llama.cpp's llama_memory_i has the same split).
#pragma once

#include <torch/torch.h>

#include "models/gpt/attention_mask.h"

#include <utility>
#include <vector>

namespace vispec {

// Where a cache's committed lengths live: on the host (a dynamic cache), or on the device (a static cache, whose
// every block is a static step), where hidden_prefix C > 0 makes the buffers in which a prefill's hidden prefix
// (KvBlock::visible) is written in place, so that copies of the cache share them.
struct KvLengths {
  bool on_device = false;
  int64_t hidden_prefix = 0;
};

// One forward's block, what KvCache::begin_block opens.
struct KvBlock {
  int64_t entries = 0;  // T: the entries this forward writes per row
  // [T, W] or [B, T, W] bool, W the block's width once written, true = query i may attend to block entry j;
  // undefined: causal within the block. W = T opens a new block; W = pending + T adds this forward's entries to
  // the pending block (a draft tree's next level), the mask's first pending columns over its earlier entries.
  torch::Tensor mask;
  // Which committed entries the queries see: [T, C] or [B, T, C] bool over the first C slots, C at least the
  // (equal) committed length of every row; the columns past it are not read. A static block reads it on the
  // device through its length bucket, so there C is the capacity (a mask made on the device, e.g. by comparing
  // positions, keeps the block free of uploads). Undefined: every committed entry (ZipAR restricts them).
  torch::Tensor committed;
  // A prefill's visible [B, C] bool: from now until reset(), entry j < C of row b is seen only where
  // visible[b][j], or by the query at that same entry (LlamaGen's emb_mask keeps the diagonal, so a padded
  // position still attends to itself). A static cache writes it in place and keeps it across reset(), for its
  // next prefill to overwrite.
  torch::Tensor visible;
  // Where the block is not one entry per node (end-of-line entries): node_starts[b] holds N + 1 ascending block
  // indices, node t of row b owning entries [node_starts[b][t], node_starts[b][t + 1]) (entries past the last
  // are padding that no commit keeps), and entry_node [B, T] the node of each entry, which sees what its node
  // sees of `committed` (given per node).
  std::vector<std::vector<int64_t>> node_starts;
  torch::Tensor entry_node;
};

// The width a block of T entries under `mask` (KvBlock::mask) has once written.
inline int64_t block_width(int64_t T, const torch::Tensor& mask) { return mask.defined() ? mask.size(-1) : T; }

class KvCache {
 public:
  // lengths: where the committed lengths live (see KvLengths).
  KvCache(int64_t n_layer, int64_t batch, int64_t kv_heads, int64_t capacity, int64_t head_dim, torch::Dtype dtype,
          torch::Device device, KvLengths lengths = {});

  int64_t batch() const { return int64_t(length_.size()); }
  int64_t capacity() const { return capacity_; }
  int64_t length(int64_t row) const { return length_[row]; }
  int64_t pending() const { return pending_; }

  // --- used by the model, once per forward then once per layer ---
  // Opens `block`: a pending block of block.entries entries per row, or adds them to it (a mask wider than them).
  // Returns what the queries may attend to over all S = max length + W keys (W: the block's width after this
  // call): no mask tensor where none is needed (rows of equal length, nothing hidden, and either one query per
  // row or a causal block with nothing committed), else the dense [B, 1, T, S] mask.
  AttentionMask begin_block(const KvBlock& block);
  AttentionMask begin_block(int64_t T, const torch::Tensor& mask) { return begin_block(KvBlock{T, mask}); }
  // Stores one layer's block keys/values k, v [B, Hkv, T, Dh]; returns that layer's keys/values to attend over,
  // [B, Hkv, S, Dh] each.
  std::pair<torch::Tensor, torch::Tensor> write(int64_t layer, const torch::Tensor& k, const torch::Tensor& v);
  // What the fused path (kernels/rope_write_kv.h, kernels/attend_cache.h) needs to do write()'s work itself: the cache
  // slots of this forward's entries, [B, T] int64 (made once per forward, when first asked), each layer's whole
  // caches to write them into, and how many of their first slots the queries attend over (the S of write()'s views).
  const torch::Tensor& block_slots() const;
  const torch::Tensor& keys(int64_t layer) const { return k_[layer]; }    // [B, Hkv, capacity, Dh]
  const torch::Tensor& values(int64_t layer) const { return v_[layer]; }  // [B, Hkv, capacity, Dh]
  int64_t attended_keys() const { return device_lengths() ? bucket_ : max_length() + pending_; }

  // --- used by the decoder ---
  const torch::Tensor& prefix_visible() const { return prefix_visible_; }  // undefined: nothing hidden
  // [B] int64: how many of each row's first entries are hidden (counted once, not per forward).
  const torch::Tensor& prefix_hidden() const { return prefix_hidden_; }
  // --- the commits: every one acts on the device lengths, the only truth of a static cache ---
  // Per-sample arguments: a cache of R rows holds R / S streams of S samples each (the CFG's [cond; uncond]
  // rows), and a commit given S rows applies row s's to every stream's row s; given R rows, one per row.
  // advance(): commits the whole pending block of every row (AR, a drafter's steps, a committed image row).
  void advance();
  // Moves every row's committed length by counts[s]: a positive count commits the first counts[s] nodes of the
  // pending block where they already are, a negative one drops the row's last committed entries; no data moves.
  // How chain decoders keep [newest, accepted drafts] and roll their drafter back. Device counts ([S] int64 on
  // the cache's device) stay there: a static cache adds them on the device, and its host plan counts the whole
  // pending block (an upper bound) until settle(); a dynamic cache reads them. Host counts are known: a static
  // cache uploads them.
  void advance(const torch::Tensor& counts);
  void advance(const std::vector<int64_t>& counts);
  // Commits block entries paths[s] (ascending, each < pending; -1 past each path's end, or an empty host path:
  // none) of every row, compacted to follow its committed entries in the given order, as one gather and one
  // scatter for every layer's keys and values together whatever the batch: how tree decoders commit their
  // accepted paths. Device paths [S, W] int64 move the entries on the device with operators that depend on W
  // alone (the host plan counts W entries until settle()); a dynamic cache reads them.
  void keep_paths(const torch::Tensor& paths);
  void keep_paths(const std::vector<std::vector<int64_t>>& paths);
  void reset();
  // Rows taking new samples (continuous batching): in a cache of `samples` samples per stream, sample rows
  // `rows` of every stream of `prefilled` (a cache of the same rows and layers holding the new samples' prefills,
  // committed, nothing pending) become those rows here: their entries, their lengths and their hidden prefixes.
  // The other rows go on where they are; nothing may be pending here either.
  void take_rows(const KvCache& prefilled, const std::vector<int64_t>& rows, int64_t samples);

  // --- the host plan ---
  // A static cache's host lengths are a plan: exact after settle() and after commits of known size, an upper
  // bound after device commits, which is all a block's bucket needs. settle(lengths) restarts the plan from
  // every row's length as the device holds it (read with an iteration's results, or known in advance: as it
  // stood when the iteration began, which is how a body that a graph may rerun starts each run) and closes the
  // pending block. A dynamic cache's host lengths are the truth, moved by its commits: settle() leaves them.
  void settle(const std::vector<int64_t>& lengths);
  const std::vector<int64_t>& lengths() const { return length_; }
  // Every row's committed length as a tensor, for a commit computed from another cache's: a static cache's
  // device lengths, a dynamic cache's host ones (on the CPU).
  torch::Tensor lengths_now() const;

  // --- the static step ---
  // Keys a static block's view grows by: one captured graph per bucket (a 256-token image: 5 buckets).
  static constexpr int64_t kLengthBucket = 64;
  bool device_lengths() const { return lengths_device_.defined(); }
  const torch::Tensor& lengths_on_device() const { return lengths_device_; }  // [R] int64, never reallocated
  // Plans the static block of T entries per row and width W (KvBlock::mask: T, or pending + T to extend the
  // pending block) that the next begin_block() opens (its shape and the bucket its keys are read through, from
  // the host plan) and returns the bucket. A planned block is opened by every begin_block() of its T and W until
  // a commit or settle(): a step run, warmed up and captured opens the same block each time (an extension's W is
  // the block's new width, so a further level, wider still, is planned anew).
  int64_t plan_static_block(int64_t T, int64_t W);
  int64_t bucket() const { return bucket_; }
  // The bucket a static block of `width` entries would be read through now (plan_static_block's, host only).
  int64_t bucket_for(int64_t width) const;

 private:
  bool uniform_lengths() const;
  int64_t max_length() const;
  // The block entries of nodes `nodes` of one row (themselves when the block is one entry per node).
  std::vector<int64_t> entries_of(int64_t row, const std::vector<int64_t>& nodes) const;
  void keep_entry_rows(const std::vector<std::vector<int64_t>>& rows);
  void keep_device_paths(const torch::Tensor& paths);  // keep_paths on a static cache, [S, W]
  // Row r's entries at slots src[r][j] move to dst[r][j] ([R, W] int64 on the cache's device) in every layer.
  void move_entries(const torch::Tensor& src, const torch::Tensor& dst);
  // lengths_device_ as [R / S, S]: a per-sample [S] tensor broadcasts over its streams.
  torch::Tensor lengths_by_stream(int64_t samples) const;
  // Per-sample host values given to every row (R / S copies).
  std::vector<int64_t> every_row(const std::vector<int64_t>& per_sample) const;
  // The commit closes the pending block: the host plan's own bookkeeping after any commit.
  void close_block();
  // P, the pending entries a block of T entries and width W extends (0: it opens a new block), checked.
  int64_t extending(int64_t T, int64_t W) const;
  AttentionMask begin_static_block(int64_t T, int64_t W, const torch::Tensor& block_mask, torch::Tensor committed);
  AttentionMask begin_dynamic_block(int64_t T, int64_t W, const torch::Tensor& block_mask,
                                    const torch::Tensor& committed);
  // The block's `committed` restriction, given per node, given to its entries (KvBlock::entry_node).
  static torch::Tensor spread_committed(const torch::Tensor& committed, const torch::Tensor& entry_node);
  void hide_prefix_keys(const torch::Tensor& visible);  // KvBlock::visible

  // Every layer's keys and values in one storage, [2 n_layer, B, Hkv, capacity, Dh] (layer l's keys at 2 l, its
  // values at 2 l + 1), so that a commit moves the kept entries of all layers in one gather and one scatter
  // (move_entries) rather than four operators, each a kernel on a GPU, per layer.
  torch::Tensor entries_;
  std::vector<torch::Tensor> k_, v_;  // per layer [B, Hkv, capacity, Dh]: views into entries_
  std::vector<int64_t> length_;       // committed entries per row
  int64_t capacity_;
  int64_t pending_ = 0;           // entries in the pending block
  int64_t written_from_ = 0;      // block index of the first entry this forward writes
  torch::Tensor prefix_visible_;  // [B, C] bool: which of each row's first C entries queries may see
  torch::Tensor prefix_hidden_;   // [B] int64: how many of them are hidden
  torch::Tensor slot_index_;  // write slots of the pending block: [B, 1, T, 1] when lengths differ, [B, 1, T] static
  mutable torch::Tensor block_slots_;  // [B, T]: this forward's slots for the fused path (undefined until asked)
  std::vector<std::vector<int64_t>> node_starts_;  // the pending block's entries per node (empty: one each)
  torch::Tensor lengths_device_;                   // [B] int64 on the device: the static step's committed lengths
  torch::Tensor key_index_;                        // [capacity] int64 on the device: 0 .. capacity - 1
  torch::Tensor row_index_, head_index_;  // [B, 1, 1] and [1, Hkv, 1]: with slot_index_, a static write's indices
  int64_t bucket_ = 0;                    // keys of the static block's view
  int64_t planned_ = 0;                   // T of the planned static block that begin_block reopens (0: none)
  int64_t planned_width_ = 0;             // and its width
};

// For the tests (process-wide, off by default): every settle() reads the device lengths and checks that it was
// given them (a decoder's "known" lengths are right), and every static block checks that the host plan is at
// least every row's device length (its bucket holds every key it must read).
void set_kv_plan_check(bool enabled);

// An attention mask [B, T, S] (true = may attend) for queries at sequence slots query_slots [B, T], with the
// prefix keys that `visible` [B, C] hides taken out (each query keeps its own slot). Updated in place.
torch::Tensor apply_prefix_visibility(torch::Tensor mask, const torch::Tensor& visible,
                                      const torch::Tensor& query_slots);
// How many of each row's first C entries `visible` [B, C] hides, [B] int64: a prompt's left padding, which 1D
// positions skip (they count from a row's first real token).
torch::Tensor hidden_prefix_count(const torch::Tensor& visible);

}  // namespace vispec
