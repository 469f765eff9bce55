// A static, preallocated key/value cache (post-RoPE keys, as in LlamaGen's gpt-fast cache).
//
// Each batch row holds `length(row)` committed entries. A forward appends a *pending* block of T entries after
// them, attending under an arbitrary [T, T] block mask (causal, tree, parallel verification). The decoder then
// decides what stays: keep_all() (AR), keep_rows(indices) (accepted tree paths, compacted in order),
// shift_lengths(delta) (accepted chain prefixes, where they are; a negative delta drops committed entries), or
// nothing (the next block overwrites the pending one).
// extend_pending() makes the next forward add its entries to the pending block instead (a draft tree grown
// level by level runs only its new nodes; their mask also covers the block's earlier entries).
// By default a block sees every committed entry; restrict_committed() narrows that for the next forward (ZipAR
// commits entries out of raster order, so a query may only see those at earlier raster positions), and
// hide_prefix_keys() hides some of each row's first entries from every later query (a caption's padding).
// A block may hold more entries than the decoder fed tokens: where each image row ends in a forced end-of-line
// token (models/gpt/sequence_layout.h) the model adds that token's entry after a row's last token. The model then
// tells the cache which entries each fed token ("node") owns (set_block_nodes), and every keep call, which
// names nodes, keeps their entries.
// The static step (docs/decoding_floor.md, "The static step"): after use_device_lengths() the committed lengths
// also live in a device tensor, and a block writes at slots computed from it and attends over a fixed-width
// view of the cache (the length bucket: the longest row plus the block, rounded up to kLengthBucket keys)
// masked by each row's length. A forward then has the same operators, shapes and scalars at every step of a
// bucket and reads nothing from the host, which is what a CUDA graph (models/gpt/step_graph.h) replays. A static
// block may extend the pending block and restrict the committed entries as a dynamic one does.
// The cache knows nothing of sampling or acceptance (llama.cpp's llama_memory_i has the same split).
#pragma once

#include <torch/torch.h>

#include "models/gpt/attention_mask.h"

#include <utility>
#include <vector>

namespace vispec {

class KvCache {
 public:
  KvCache(int64_t n_layer, int64_t batch, int64_t kv_heads, int64_t capacity, int64_t head_dim, torch::Dtype dtype,
          torch::Device device);

  int64_t batch() const { return int64_t(length_.size()); }
  int64_t capacity() const { return capacity_; }
  int64_t length(int64_t row) const { return length_[row]; }
  int64_t pending() const { return pending_; }

  // --- used by the model, once per forward then once per layer ---
  // Opens a pending block of T entries per row, or adds T entries to it after extend_pending(). block_mask:
  // [T, W] or [B, T, W] bool with W the block's width after this call (T, or pending + T), true = may attend
  // (query i to block key j); undefined: causal within the block. Returns what the queries may attend to over
  // all S = max length + W keys: no mask tensor where none is needed (rows of equal length, nothing hidden,
  // and either one query per row or a causal block with nothing committed), else the dense [B, 1, T, S] mask.
  AttentionMask begin_block(int64_t T, const torch::Tensor& block_mask);
  // Stores one layer's block keys/values k, v [B, Hkv, T, Dh]; returns that layer's keys/values to attend over,
  // [B, Hkv, S, Dh] each.
  std::pair<torch::Tensor, torch::Tensor> write(int64_t layer, const torch::Tensor& k, const torch::Tensor& v);
  // What the fused path (kernels/rope_write_kv.h, kernels/attend_cache.h) needs to do write()'s work itself: the cache
  // slots of this forward's entries, [B, T] int64 (made once per forward), each layer's whole caches to write them
  // into, and how many of their first slots the queries attend over (the S of write()'s views).
  const torch::Tensor& block_slots();
  const torch::Tensor& keys(int64_t layer) const { return k_[layer]; }    // [B, Hkv, capacity, Dh]
  const torch::Tensor& values(int64_t layer) const { return v_[layer]; }  // [B, Hkv, capacity, Dh]
  int64_t attended_keys() const { return device_lengths() ? bucket_ : max_length() + pending_; }

  // After begin_block, when the block is not one entry per node: starts[b] holds T + 1 ascending block
  // indices, node t of row b owning entries [starts[b][t], starts[b][t + 1]); entries past starts[b][T] are
  // padding that no keep commits.
  void set_block_nodes(std::vector<std::vector<int64_t>> starts) { node_starts_ = std::move(starts); }
  // The same block's restriction of committed entries (restrict_committed, per node) given to its entries:
  // source [B, T'] is the node of each entry; an end-of-line entry sees what its node sees.
  void spread_committed(const torch::Tensor& source);

  // --- used by the decoder ---
  void extend_pending() { extend_ = true; }
  // Which committed entries the next block's queries see: [T, C] or [B, T, C] bool over the first C slots, C at
  // least the (equal) committed length of every row; the columns past it are not read. A static block reads
  // it on the device through its length bucket, so there C is the capacity (a mask made on the device, e.g. by
  // comparing positions, keeps the block free of uploads).
  void restrict_committed(const torch::Tensor& mask) { committed_mask_ = mask; }
  // visible [B, C] bool: from now until reset(), entry j < C of row b is seen only where visible[b][j], or by
  // the query at that same entry (LlamaGen's emb_mask keeps the diagonal, so a padded position still attends
  // to itself). Call before the block that writes those entries. A static cache (use_device_lengths) writes
  // it in place and keeps it across reset(), for its next prefill to overwrite.
  void hide_prefix_keys(const torch::Tensor& visible);
  const torch::Tensor& prefix_visible() const { return prefix_visible_; }  // undefined: nothing hidden
  // [B] int64: how many of each row's first entries are hidden (counted once, not per forward).
  const torch::Tensor& prefix_hidden() const { return prefix_hidden_; }
  // The commit protocol: three calls cover every decoder.
  // Commits the whole pending block of every row (AR, a drafter's steps, a committed image row).
  void keep_all();
  // Commits block entries rows[b] (ascending, each < pending; empty: none) of every row, compacted to follow
  // its committed entries in the given order, as one gather and one scatter for every layer's keys and values
  // together whatever the batch: how tree decoders commit their accepted paths. `on_device`: the same rows as a [B, W]
  // int64 tensor on the cache's device, -1 past each row's last (W at least the longest row), with which a static cache
  // of one entry per node moves the entries and adds the counts on the device: nothing is uploaded, and the operators
  // depend on W alone.
  void keep_rows(const std::vector<std::vector<int64_t>>& rows, const torch::Tensor& on_device = {});
  // keep_rows() in two halves, for an iteration whose device half is replayed (a static cache, lengths current):
  // the entries moved and the counts added on the device (inside the graph), then the host's lengths (after its
  // read). On a dynamic cache the device half does nothing and the host half is keep_rows().
  void keep_rows_on_device(const torch::Tensor& on_device);
  void keep_rows_on_host(const std::vector<std::vector<int64_t>>& rows);
  // Moves every row's committed length by delta[b] at once: a positive delta commits the first delta[b] entries
  // (nodes) of the pending block where they already are, a negative one drops the row's last committed
  // entries; no data moves. How chain decoders keep [newest, accepted drafts] and roll their drafter back.
  // `on_device`: the same numbers as a [B] int64 tensor on the cache's device (the accepted counts a decoder
  // read), which a static cache adds to its device lengths in one operation; without it the next static
  // block uploads the lengths.
  void shift_lengths(const std::vector<int64_t>& delta, const torch::Tensor& on_device = {});
  // shift_lengths() in two halves, for an iteration whose device half is replayed (a static cache, lengths
  // current): the device counts added on the device (inside the graph), then the host's (after its read). On a
  // dynamic cache the device half does nothing and the host half is shift_lengths().
  void shift_lengths_on_device(const torch::Tensor& on_device);
  void shift_lengths_on_host(const std::vector<int64_t>& delta);
  void reset();

  // --- the static step ---
  // Keys a static block's view grows by: one captured graph per bucket (a 256-token image: 5 buckets).
  static constexpr int64_t kLengthBucket = 64;
  // From now on (until the cache is destroyed) lengths are mirrored on the device and every block is static.
  // One upload of the host lengths; later commits upload them again except keep_all() (and its two halves)
  // and shift_lengths() given its device counts, which stay on the device. hidden_prefix C > 0 makes the buffers
  // hide_prefix_keys() will write in place (nothing hidden until then), so that copies of this cache share them.
  void use_device_lengths(int64_t hidden_prefix = 0);
  bool device_lengths() const { return lengths_device_.defined(); }
  const torch::Tensor& lengths_on_device() const { return lengths_device_; }  // [B] int64, never reallocated
  // The host half of opening a static block of T entries per row: the block's shape and the bucket its keys are
  // read through, from the host lengths, which the device half never changes. begin_block() calls it; a
  // replayed graph does not, so a caller replaying one calls it first. Returns the bucket.
  int64_t plan_static_block(int64_t T);
  int64_t bucket() const { return bucket_; }
  // The bucket a static block of `width` entries would be read through now (plan_static_block's, host only).
  int64_t bucket_for(int64_t width) const;
  // Whether the device lengths are current (no upload pending): a step that would upload them cannot be
  // replayed.
  bool lengths_current() const { return device_lengths() && !lengths_stale_; }

  // A replayed graph runs none of the host bookkeeping that its step did when it was recorded. For a static
  // cache that bookkeeping moves every length by the same amounts whatever the lengths (blocks planned,
  // committed or shifted by the counts of a step of one key), so a replay's host state is the recorded step's
  // after-state with the lengths moved as they moved then: follow_host() puts it there, from this cache's state
  // before the replay. same_host_state(): equal host bookkeeping, for the check that proves it on the CPU.
  void follow_host(const KvCache& recorded_before, const KvCache& recorded_after);
  bool same_host_state(const KvCache& other) const;
  // While held, begin_block() opens the block planned last instead of planning one: a step that extends the
  // pending block is run, warmed up and captured, and each run must open the same block (StaticForwards).
  void hold_plan(bool held) { plan_held_ = held; }
  // keep_all() in two halves, for a step whose device half is replayed: lengths += block on the device (inside
  // the step), then on the host (after it).
  void keep_all_on_device();
  void keep_all_on_host();

 private:
  bool uniform_lengths() const;
  int64_t max_length() const;
  // The block entries of nodes `nodes` of one row (themselves when the block is one entry per node).
  std::vector<int64_t> entries_of(int64_t row, const std::vector<int64_t>& nodes) const;
  void keep_entry_rows(const std::vector<std::vector<int64_t>>& rows);
  void keep_device_rows(const torch::Tensor& rows);  // keep_rows' device half (a static cache)
  // Row b's entries at slots src[b][j] move to dst[b][j] ([B, W] int64 on the cache's device) in every layer.
  void move_entries(const torch::Tensor& src, const torch::Tensor& dst);
  AttentionMask begin_static_block(int64_t T, const torch::Tensor& block_mask);
  void upload_lengths();  // after a host-only commit in static mode: marks the device lengths stale
  void sync_lengths();    // uploads them if stale (the host half of a static block, keep_all)

  // Every layer's keys and values in one storage, [2 n_layer, B, Hkv, capacity, Dh] (layer l's keys at 2 l, its
  // values at 2 l + 1), so that a commit moves the kept entries of all layers in one gather and one scatter
  // (move_entries) rather than four operators, each a kernel on a GPU, per layer.
  torch::Tensor entries_;
  std::vector<torch::Tensor> k_, v_;  // per layer [B, Hkv, capacity, Dh]: views into entries_
  std::vector<int64_t> length_;       // committed entries per row
  int64_t capacity_;
  int64_t pending_ = 0;           // entries in the pending block
  int64_t written_from_ = 0;      // block index of the first entry this forward writes
  bool extend_ = false;           // the next begin_block adds to the pending block
  torch::Tensor committed_mask_;  // for the next begin_block: visible committed entries (undefined: all)
  torch::Tensor prefix_visible_;  // [B, C] bool: which of each row's first C entries queries may see
  torch::Tensor prefix_hidden_;   // [B] int64: how many of them are hidden
  torch::Tensor slot_index_;   // write slots of the pending block: [B, 1, T, 1] when lengths differ, [B, 1, T] static
  torch::Tensor block_slots_;  // [B, T]: this forward's slots for the fused path (undefined until asked)
  std::vector<std::vector<int64_t>> node_starts_;  // the pending block's entries per node (empty: one each)
  torch::Tensor lengths_device_;                   // [B] int64 on the device: the static step's committed lengths
  torch::Tensor key_index_;                        // [capacity] int64 on the device: 0 .. capacity - 1
  torch::Tensor row_index_, head_index_;  // [B, 1, 1] and [1, Hkv, 1]: with slot_index_, a static write's indices
  int64_t bucket_ = 0;                    // keys of the static block's view
  bool plan_held_ = false;                // begin_block() opens the planned block (hold_plan)
  bool lengths_stale_ = false;            // host-side commits not yet uploaded to lengths_device_
};

// An attention mask [B, T, S] (true = may attend) for queries at sequence slots query_slots [B, T], with the
// prefix keys that `visible` [B, C] hides taken out (each query keeps its own slot). Updated in place.
torch::Tensor apply_prefix_visibility(torch::Tensor mask, const torch::Tensor& visible,
                                      const torch::Tensor& query_slots);
// How many of each row's first C entries `visible` [B, C] hides, [B] int64: a prompt's left padding, which 1D
// positions skip (they count from a row's first real token).
torch::Tensor hidden_prefix_count(const torch::Tensor& visible);

}  // namespace vispec
