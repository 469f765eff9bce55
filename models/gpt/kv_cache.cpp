#include "models/gpt/kv_cache.h"

#include <ATen/record_function.h>

#include <algorithm>

#include "core/check.h"

namespace vispec {

namespace {
torch::Tensor causal_mask_block(int64_t W, torch::Device device) {
  return torch::ones({W, W}, torch::TensorOptions().dtype(torch::kBool).device(device)).tril();
}
}  // namespace

KvCache::KvCache(int64_t n_layer, int64_t batch, int64_t kv_heads, int64_t capacity, int64_t head_dim,
                 torch::Dtype dtype, torch::Device device)
    : length_(batch, 0), capacity_(capacity) {
  entries_ = torch::zeros({2 * n_layer, batch, kv_heads, capacity, head_dim},
                          torch::TensorOptions().dtype(dtype).device(device));
  for (int64_t l = 0; l < n_layer; ++l) {
    k_.push_back(entries_[2 * l]);
    v_.push_back(entries_[2 * l + 1]);
  }
}

bool KvCache::uniform_lengths() const {
  return std::all_of(length_.begin(), length_.end(), [&](int64_t n) { return n == length_[0]; });
}

int64_t KvCache::max_length() const { return *std::max_element(length_.begin(), length_.end()); }

void KvCache::spread_committed(const torch::Tensor& source) {
  if (!committed_mask_.defined()) return;
  auto m = committed_mask_.to(source.device(), torch::kBool);
  const int64_t B = source.size(0), E = source.size(1);
  if (m.dim() == 2) m = m.unsqueeze(0).expand({B, m.size(0), m.size(1)});
  committed_mask_ = m.gather(1, source.unsqueeze(2).expand({B, E, m.size(2)}));
}

AttentionMask KvCache::begin_block(int64_t T, const torch::Tensor& block_mask) {
  block_slots_ = torch::Tensor();
  if (device_lengths()) return begin_static_block(T, block_mask);
  VISPEC_ASSERT(!extend_ || node_starts_.empty(), "a block with end-of-line entries cannot be extended");
  node_starts_.clear();
  const int64_t P = extend_ ? pending_ : 0, W = P + T;  // W: the block's width once this forward is written
  extend_ = false;
  const int64_t B = batch(), S = max_length() + W;
  VISPEC_ASSERT(S <= capacity_, "KV cache overflow: need ", S, " of ", capacity_, " slots");
  const auto device = k_[0].device();
  pending_ = W;
  written_from_ = P;
  auto restricted = std::move(committed_mask_);
  committed_mask_ = torch::Tensor();
  const bool plain = uniform_lengths() && !restricted.defined() && !prefix_visible_.defined() && P == 0;
  // A lone query sees every committed key and itself (a query always sees itself, whatever its [1, 1] block
  // mask says); a causal block over an empty cache is SDPA's own causal mode.
  if (plain && T == 1) {
    slot_index_ = torch::Tensor();
    return AttentionMask::every_key();
  }
  if (plain && !block_mask.defined() && length_[0] == 0) {
    slot_index_ = torch::Tensor();
    return AttentionMask::causal_block();
  }
  auto bm = block_mask.defined() ? block_mask.to(device, torch::kBool) : causal_mask_block(W, device).narrow(0, P, T);
  if (bm.dim() == 2) bm = bm.unsqueeze(0).expand({B, T, W});
  VISPEC_ASSERT(bm.size(0) == B && bm.size(1) == T && bm.size(2) == W, "block mask shape");
  if (uniform_lengths()) {
    slot_index_ = torch::Tensor();
    const int64_t L = length_[0];
    auto committed = torch::ones({B, T, L}, torch::TensorOptions().dtype(torch::kBool).device(device));
    if (restricted.defined()) {
      VISPEC_ASSERT(restricted.size(-1) >= L, "a committed mask of ", restricted.size(-1), " columns over ", L,
                    " committed entries");
      committed = restricted.to(device, torch::kBool).narrow(-1, 0, L);
      if (committed.dim() == 2) committed = committed.unsqueeze(0).expand({B, T, L});
      VISPEC_ASSERT(committed.size(0) == B && committed.size(1) == T && committed.size(2) == L, "committed mask shape");
    }
    auto mask = torch::cat({committed, bm}, -1);
    if (prefix_visible_.defined()) {
      auto slots = torch::arange(L + P, L + W, torch::TensorOptions().dtype(torch::kInt64).device(device));
      mask = apply_prefix_visibility(mask, prefix_visible_, slots.unsqueeze(0).expand({B, T}));
    }
    return {mask.unsqueeze(1)};
  }
  VISPEC_ASSERT(!restricted.defined(), "restrict_committed() needs rows of equal length");
  // Ragged rows (after per-row accepts): row b's block sits at slots [length_b, length_b + W).
  auto lengths = torch::tensor(length_, torch::kInt64).to(device);  // [B]
  auto w = torch::arange(W, torch::TensorOptions().dtype(torch::kInt64).device(device));
  auto slots = lengths.unsqueeze(1) + w.unsqueeze(0);  // [B, W]
  slot_index_ = slots.narrow(1, P, T).reshape({B, 1, T, 1});
  auto mask = torch::zeros({B, T, S}, torch::TensorOptions().dtype(torch::kBool).device(device));
  auto key = torch::arange(S, torch::TensorOptions().dtype(torch::kInt64).device(device));
  mask.copy_((key.view({1, 1, S}) < lengths.view({B, 1, 1})).expand({B, T, S}));
  mask.scatter_(2, slots.unsqueeze(1).expand({B, T, W}), bm);
  if (prefix_visible_.defined()) mask = apply_prefix_visibility(mask, prefix_visible_, slots.narrow(1, P, T));
  return {mask.unsqueeze(1)};
}

void KvCache::use_device_lengths(int64_t hidden_prefix) {
  if (device_lengths()) return;
  const auto device = k_[0].device();
  lengths_device_ = torch::tensor(length_, torch::kInt64).to(device);
  key_index_ = torch::arange(capacity_, torch::TensorOptions().dtype(torch::kInt64).device(device));
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(device);
  row_index_ = torch::arange(batch(), i64).view({batch(), 1, 1});
  head_index_ = torch::arange(k_[0].size(1), i64).view({1, k_[0].size(1), 1});
  if (hidden_prefix > 0 && !prefix_visible_.defined()) {
    prefix_visible_ = torch::ones({batch(), hidden_prefix}, torch::TensorOptions().dtype(torch::kBool).device(device));
    prefix_hidden_ = torch::zeros({batch()}, torch::TensorOptions().dtype(torch::kInt64).device(device));
  }
}

void KvCache::upload_lengths() {
  // Lazily: a decoder's host-only commits (keep_rows, shift_lengths without device counts) cost one upload,
  // made by the next static block's host half.
  if (device_lengths()) lengths_stale_ = true;
}

void KvCache::sync_lengths() {
  if (!lengths_stale_) return;
  RECORD_FUNCTION("vispec::host_upload", std::vector<c10::IValue>());  // counted by traces and profiles
  lengths_device_.copy_(torch::tensor(length_, torch::kInt64));
  lengths_stale_ = false;
}

int64_t KvCache::plan_static_block(int64_t T) {
  VISPEC_ASSERT(device_lengths(), "a static block needs use_device_lengths()");
  VISPEC_ASSERT(!extend_ || node_starts_.empty(), "a block with end-of-line entries cannot be extended");
  const int64_t P = extend_ ? pending_ : 0, W = P + T;  // W: the block's width once this forward is written
  extend_ = false;
  const int64_t need = max_length() + W;
  VISPEC_ASSERT(T >= 1 && need <= capacity_, "KV cache overflow: need ", need, " of ", capacity_, " slots");
  sync_lengths();
  bucket_ = bucket_for(W);
  block_slots_ = torch::Tensor();
  pending_ = W;
  written_from_ = P;
  node_starts_.clear();
  return bucket_;
}

// Every shape below is (B, T, P, bucket) and every scalar T or P: the same at every step of a bucket. Row b's
// block sits at slots [L_b, L_b + W) with L_b = lengths_device_[b], this forward's entries at [L_b + P, L_b + W)
// (P > 0: it extends the pending block); key slot s is seen where s < L_b (committed) or where the block mask
// lets the query see block entry s - L_b. A restriction of the committed entries (restrict_committed, on the
// device) hides the committed keys it does not show, read through the same bucket.
AttentionMask KvCache::begin_static_block(int64_t T, const torch::Tensor& block_mask) {
  // A held plan is the block a runner planned before its step, which it may run, warm up and capture: each
  // begins the same block.
  VISPEC_ASSERT(!plan_held_ || T == pending_ - written_from_, "a block of ", T, " entries where ",
                pending_ - written_from_, " were planned");
  const int64_t S = plan_held_ ? bucket_ : plan_static_block(T), B = batch(), P = written_from_, W = pending_;
  const auto device = k_[0].device();
  const auto& L = lengths_device_;
  const auto rel = key_index_.narrow(0, 0, S).view({1, 1, S}) - L.view({B, 1, 1});  // [B, 1, S]: slot - L_b
  slot_index_ = L.view({B, 1, 1}) + key_index_.narrow(0, P, T).view({1, 1, T});     // [B, 1, T]
  block_slots_ = torch::Tensor();                                                   // made from slot_index_ when asked
  torch::Tensor mask;
  if (W == 1) {
    mask = rel.le(0);  // a lone query sees its row's committed keys and itself, whatever its [1, 1] block mask
  } else {
    auto bm = block_mask.defined() ? block_mask.to(device, torch::kBool) : causal_mask_block(W, device).narrow(0, P, T);
    if (bm.dim() == 2) bm = bm.unsqueeze(0).expand({B, T, W});
    VISPEC_ASSERT(bm.size(0) == B && bm.size(1) == T && bm.size(2) == W, "block mask shape");
    const auto in_block = rel.ge(0).logical_and(rel.lt(W));
    const auto block_seen = bm.gather(2, rel.clamp(0, W - 1).expand({B, T, S})).logical_and(in_block);
    mask = rel.lt(0).logical_or(block_seen);  // [B, T, S]
  }
  if (committed_mask_.defined()) {
    const auto restricted = std::move(committed_mask_);
    committed_mask_ = torch::Tensor();
    VISPEC_ASSERT(restricted.device() == device && restricted.size(-1) >= S,
                  "a static block's committed mask must be on the cache's device and span its bucket (", S, " slots)");
    auto seen = restricted.to(torch::kBool).narrow(-1, 0, S);
    if (seen.dim() == 2) seen = seen.unsqueeze(0);
    mask = mask.logical_and(seen.logical_or(rel.ge(0)));  // a committed key (rel < 0) only where shown
  }
  if (prefix_visible_.defined()) mask = apply_prefix_visibility(mask, prefix_visible_, slot_index_.view({B, T}));
  return {mask.unsqueeze(1)};
}

void KvCache::keep_all_on_device() {
  VISPEC_ASSERT(device_lengths() && !lengths_stale_, "keep_all_on_device without current device lengths");
  lengths_device_.add_(pending_);
}

void KvCache::keep_all_on_host() {
  for (size_t b = 0; b < length_.size(); ++b) length_[b] += node_starts_.empty() ? pending_ : node_starts_[b].back();
  pending_ = 0;
}

void KvCache::hide_prefix_keys(const torch::Tensor& visible) {
  auto v = visible.to(k_[0].device(), torch::kBool);
  if (device_lengths() && prefix_visible_.defined() && prefix_visible_.sizes() == v.sizes()) {
    // In place, so that a replayed static step reads this prefill's visibility, not a freed tensor.
    prefix_visible_.copy_(v);
    prefix_hidden_.copy_(hidden_prefix_count(v));
    return;
  }
  prefix_visible_ = v;
  prefix_hidden_ = hidden_prefix_count(prefix_visible_);
}

torch::Tensor hidden_prefix_count(const torch::Tensor& visible) {
  return visible.size(1) - visible.sum(1, /*keepdim=*/false, torch::kInt64);
}

torch::Tensor apply_prefix_visibility(torch::Tensor mask, const torch::Tensor& visible,
                                      const torch::Tensor& query_slots) {
  const int64_t B = mask.size(0), T = mask.size(1), C = std::min(visible.size(1), mask.size(2));
  VISPEC_ASSERT(visible.size(0) == B, "prefix visibility for ", visible.size(0), " rows of ", B);
  auto key = torch::arange(C, query_slots.options()).view({1, 1, C});
  auto own = query_slots.view({B, T, 1}).eq(key);  // [B, T, C]: the query's own entry
  mask.narrow(2, 0, C).logical_and_(own.logical_or(visible.narrow(1, 0, C).view({B, 1, C})));
  return mask;
}

const torch::Tensor& KvCache::block_slots() {
  if (block_slots_.defined()) return block_slots_;
  const int64_t B = batch(), T = pending_ - written_from_;
  if (slot_index_.defined()) {
    block_slots_ = slot_index_.reshape({B, T});
  } else {  // rows of equal length: the block follows the committed entries, as write()'s copy puts it
    const int64_t from = length_[0] + written_from_;
    block_slots_ = torch::arange(from, from + T, torch::TensorOptions().dtype(torch::kInt64).device(k_[0].device()))
                       .expand({B, T});
  }
  return block_slots_;
}

std::pair<torch::Tensor, torch::Tensor> KvCache::write(int64_t layer, const torch::Tensor& k, const torch::Tensor& v) {
  auto& kc = k_[layer];
  auto& vc = v_[layer];
  const int64_t T = k.size(2), S = max_length() + pending_;
  VISPEC_ASSERT(T == pending_ - written_from_, "write of ", T, " entries into a block of ", pending_ - written_from_);
  if (device_lengths()) {  // the static step: slots from the device lengths, a fixed-width view
    // index_put_ rather than scatter_: LibTorch's CPU scatter of bf16 runs 20 to 40 times slower than its fp32.
    const c10::List<std::optional<at::Tensor>> where{row_index_, head_index_, slot_index_};  // -> [B, Hkv, T]
    kc.index_put_(where, k.to(kc.scalar_type()));
    vc.index_put_(where, v.to(vc.scalar_type()));
    return {kc.narrow(2, 0, bucket_), vc.narrow(2, 0, bucket_)};
  }
  if (!slot_index_.defined()) {
    const int64_t L = length_[0] + written_from_;
    kc.narrow(2, L, T).copy_(k);
    vc.narrow(2, L, T).copy_(v);
  } else {
    auto idx = slot_index_.expand({k.size(0), k.size(1), T, k.size(3)});
    kc.scatter_(2, idx, k.to(kc.scalar_type()));
    vc.scatter_(2, idx, v.to(vc.scalar_type()));
  }
  return {kc.narrow(2, 0, S), vc.narrow(2, 0, S)};
}

void KvCache::keep_all() {
  if (device_lengths()) {
    sync_lengths();
    keep_all_on_device();
  }
  keep_all_on_host();
}

std::vector<int64_t> KvCache::entries_of(int64_t row, const std::vector<int64_t>& nodes) const {
  if (node_starts_.empty()) return nodes;
  const auto& starts = node_starts_[size_t(row)];
  std::vector<int64_t> entries;
  for (const int64_t t : nodes) {
    VISPEC_ASSERT(t >= 0 && t + 1 < int64_t(starts.size()), "keep of node ", t, " of a block of ", starts.size() - 1);
    for (int64_t e = starts[size_t(t)]; e < starts[size_t(t) + 1]; ++e) entries.push_back(e);
  }
  return entries;
}

void KvCache::keep_rows(const std::vector<std::vector<int64_t>>& rows, const torch::Tensor& on_device) {
  if (on_device.defined() && device_lengths() && !lengths_stale_) {
    VISPEC_ASSERT(on_device.dim() == 2 && on_device.size(0) == batch(), "keep_rows: device rows of shape ",
                  on_device.sizes());
    for (const auto& r : rows)
      VISPEC_ASSERT(int64_t(r.size()) <= on_device.size(1), "keep_rows: a row of ", r.size(),
                    " entries in device rows of ", on_device.size(1));
    keep_rows_on_device(on_device);
    return keep_rows_on_host(rows);
  }
  VISPEC_ASSERT(int64_t(rows.size()) == batch(), "keep_rows of ", rows.size(), " rows in a cache of ", batch());
  std::vector<std::vector<int64_t>> entries;
  for (size_t b = 0; b < rows.size(); ++b) entries.push_back(entries_of(int64_t(b), rows[b]));
  keep_entry_rows(entries);
  upload_lengths();
}

void KvCache::keep_rows_on_device(const torch::Tensor& on_device) {
  if (!device_lengths()) return;  // a dynamic cache: its host half is the whole commit
  VISPEC_ASSERT(lengths_current() && node_starts_.empty() && on_device.dim() == 2 && on_device.size(0) == batch() &&
                    on_device.size(1) <= capacity_,
                "keep_rows: device rows of shape ", on_device.sizes(), " for current device lengths of ", batch());
  keep_device_rows(on_device);
}

void KvCache::keep_rows_on_host(const std::vector<std::vector<int64_t>>& rows) {
  VISPEC_ASSERT(int64_t(rows.size()) == batch(), "keep_rows of ", rows.size(), " rows in a cache of ", batch());
  if (!device_lengths()) return keep_rows(rows);
  for (int64_t b = 0; b < batch(); ++b) {
    const auto& r = rows[size_t(b)];
    VISPEC_ASSERT(length_[b] + int64_t(r.size()) <= capacity_ &&
                      std::all_of(r.begin(), r.end(), [&](int64_t i) { return i >= 0 && i < pending_; }),
                  "keep_rows: row ", b, " keeps ", r.size(), " entries of a block of ", pending_);
    length_[b] += int64_t(r.size());
  }
}

// keep_entry_rows' moves from device numbers: row b's entry j < n_b moves from L_b + rows[b][j] to L_b + j; the
// padding past n_b repeats the last move, or, in a row that keeps nothing, copies slot min(L_b, capacity - 1)
// onto itself. Every source is gathered before anything is written.
void KvCache::keep_device_rows(const torch::Tensor& rows) {
  const int64_t B = batch(), W = rows.size(1);
  const auto L = lengths_device_.view({B, 1});
  const auto count = rows.ge(0).sum(1, /*keepdim=*/true);  // [B, 1]
  const auto last = (count - 1).clamp_min(0);
  const auto j = torch::minimum(key_index_.narrow(0, 0, W).view({1, W}), last);  // [B, W]
  const auto none = count.eq(0);
  const auto still = L.clamp_max(capacity_ - 1);
  const auto dst = torch::where(none, still, L + j);
  const auto src = torch::where(none, still, L + rows.gather(1, j));
  move_entries(src, dst);
  lengths_device_.add_(count.view({B}));
}

// Every source is gathered before anything is written, so moves that overlap (a path's entry j from a slot
// another entry moves to) are safe.
void KvCache::move_entries(const torch::Tensor& src, const torch::Tensor& dst) {
  const int64_t B = src.size(0), W = src.size(1);
  const std::vector<int64_t> shape{entries_.size(0), B, entries_.size(2), W, entries_.size(4)};
  const auto from = src.view({1, B, 1, W, 1}).expand(shape), to = dst.view({1, B, 1, W, 1}).expand(shape);
  entries_.scatter_(3, to, entries_.gather(3, from));
}

void KvCache::keep_entry_rows(const std::vector<std::vector<int64_t>>& rows) {
  const int64_t B = batch();
  int64_t P = 0;
  bool identity = true;
  for (int64_t b = 0; b < B; ++b) {
    const auto& r = rows[size_t(b)];
    VISPEC_ASSERT(length_[b] + int64_t(r.size()) <= capacity_, "keep past capacity");
    P = std::max(P, int64_t(r.size()));
    for (size_t i = 0; i < r.size(); ++i) {
      VISPEC_ASSERT(r[i] >= 0 && r[i] < pending_, "keep index outside the block");
      identity = identity && r[i] == int64_t(i);
    }
  }
  if (!identity) {
    // Row b's entry j moves from its block index to L_b + j. The padding past a row's path repeats its last
    // move (the same value to the same place), or, for a row that keeps nothing, copies an entry onto itself.
    auto src = torch::empty({B, P}, torch::kInt64), dst = torch::empty({B, P}, torch::kInt64);
    auto sa = src.accessor<int64_t, 2>(), da = dst.accessor<int64_t, 2>();
    for (int64_t b = 0; b < B; ++b) {
      const auto& r = rows[size_t(b)];
      const int64_t n = int64_t(r.size());
      for (int64_t j = 0; j < P; ++j) {
        const int64_t at = n == 0 ? std::min(length_[b], capacity_ - 1) : std::min(j, n - 1);
        da[b][j] = n == 0 ? at : length_[b] + at;
        sa[b][j] = n == 0 ? at : length_[b] + r[size_t(at)];
      }
    }
    move_entries(src.to(entries_.device()), dst.to(entries_.device()));
  }
  for (int64_t b = 0; b < B; ++b) length_[b] += int64_t(rows[size_t(b)].size());
}

void KvCache::shift_lengths(const std::vector<int64_t>& delta, const torch::Tensor& on_device) {
  shift_lengths_on_host(delta);
  if (!device_lengths()) return;
  if (!on_device.defined() || lengths_stale_) return upload_lengths();
  shift_lengths_on_device(on_device);
}

void KvCache::shift_lengths_on_host(const std::vector<int64_t>& delta) {
  VISPEC_ASSERT(int64_t(delta.size()) == batch(), "shift_lengths of ", delta.size(), " rows in a cache of ", batch());
  for (int64_t b = 0; b < batch(); ++b) {
    int64_t n = delta[size_t(b)];
    if (n > 0 && !node_starts_.empty()) {  // nodes -> their entries
      VISPEC_ASSERT(n < int64_t(node_starts_[size_t(b)].size()), "shift_lengths commits ", n, " nodes");
      n = node_starts_[size_t(b)][size_t(n)];
    }
    VISPEC_ASSERT(n <= pending_ && length_[b] + n >= 0 && length_[b] + n <= capacity_, "shift_lengths of row ", b,
                  " by ", n, ": length ", length_[b], ", pending block ", pending_, ", capacity ", capacity_);
    length_[b] += n;
  }
}

void KvCache::shift_lengths_on_device(const torch::Tensor& on_device) {
  if (!device_lengths()) return;  // a dynamic cache: its host half is the whole commit
  VISPEC_ASSERT(lengths_current() && node_starts_.empty() && on_device.numel() == batch(),
                "shift_lengths: device counts of ", on_device.numel(), " rows for current device lengths of ", batch());
  lengths_device_.add_(on_device);
}

int64_t KvCache::bucket_for(int64_t width) const {
  const int64_t need = max_length() + width;
  return std::min(capacity_, (need + kLengthBucket - 1) / kLengthBucket * kLengthBucket);
}

void KvCache::follow_host(const KvCache& recorded_before, const KvCache& recorded_after) {
  VISPEC_ASSERT(batch() == recorded_before.batch() && batch() == recorded_after.batch(), "follow_host of ", batch(),
                " rows after a step of ", recorded_before.batch());
  auto lengths = length_;
  for (size_t b = 0; b < lengths.size(); ++b) lengths[b] += recorded_after.length_[b] - recorded_before.length_[b];
  *this = recorded_after;  // the device tensors are shared: only the host bookkeeping is taken
  length_ = std::move(lengths);
}

bool KvCache::same_host_state(const KvCache& o) const {
  return length_ == o.length_ && pending_ == o.pending_ && written_from_ == o.written_from_ && extend_ == o.extend_ &&
         bucket_ == o.bucket_ && node_starts_ == o.node_starts_ && plan_held_ == o.plan_held_ &&
         lengths_stale_ == o.lengths_stale_ && committed_mask_.defined() == o.committed_mask_.defined();
}

void KvCache::reset() {
  node_starts_.clear();
  std::fill(length_.begin(), length_.end(), 0);
  pending_ = 0;
  extend_ = false;
  committed_mask_ = torch::Tensor();
  if (device_lengths()) {
    // A static cache keeps its hidden-prefix tensors for the next prefill to overwrite in place (a caption or
    // prompt model hides a prefix at every prefill, a class model never).
    lengths_device_.zero_();
    lengths_stale_ = false;
    return;
  }
  prefix_visible_ = torch::Tensor();
  prefix_hidden_ = torch::Tensor();
}

}  // namespace vispec
