#include "models/gpt/kv_cache.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <atomic>

#include "core/check.h"

namespace vispec {

namespace {
std::atomic<bool> plan_check{false};

// The device lengths on the host, for the plan check.
std::vector<int64_t> device_lengths_now(const torch::Tensor& lengths) {
  const auto host = lengths.to(torch::kCPU).contiguous();
  return std::vector<int64_t>(host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + host.numel());
}

torch::Tensor causal_mask_block(int64_t W, torch::Device device) {
  return torch::ones({W, W}, torch::TensorOptions().dtype(torch::kBool).device(device)).tril();
}
}  // namespace

void set_kv_plan_check(bool enabled) { plan_check = enabled; }

KvCache::KvCache(int64_t n_layer, int64_t batch, int64_t kv_heads, int64_t capacity, int64_t head_dim,
                 torch::Dtype dtype, torch::Device device, KvLengths lengths)
    : length_(batch, 0), capacity_(capacity) {
  entries_ = torch::zeros({2 * n_layer, batch, kv_heads, capacity, head_dim},
                          torch::TensorOptions().dtype(dtype).device(device));
  for (int64_t l = 0; l < n_layer; ++l) {
    k_.push_back(entries_[2 * l]);
    v_.push_back(entries_[2 * l + 1]);
  }
  if (!lengths.on_device) return;
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(device);
  lengths_device_ = torch::zeros({batch}, i64);
  key_index_ = torch::arange(capacity_, i64);
  row_index_ = torch::arange(batch, i64).view({batch, 1, 1});
  head_index_ = torch::arange(kv_heads, i64).view({1, kv_heads, 1});
  if (lengths.hidden_prefix > 0) {
    prefix_visible_ =
        torch::ones({batch, lengths.hidden_prefix}, torch::TensorOptions().dtype(torch::kBool).device(device));
    prefix_hidden_ = torch::zeros({batch}, i64);
  }
}

bool KvCache::uniform_lengths() const {
  return std::all_of(length_.begin(), length_.end(), [&](int64_t n) { return n == length_[0]; });
}

int64_t KvCache::max_length() const { return *std::max_element(length_.begin(), length_.end()); }

torch::Tensor KvCache::spread_committed(const torch::Tensor& committed, const torch::Tensor& entry_node) {
  auto m = committed.to(entry_node.device(), torch::kBool);
  const int64_t B = entry_node.size(0), E = entry_node.size(1);
  if (m.dim() == 2) m = m.unsqueeze(0).expand({B, m.size(0), m.size(1)});
  return m.gather(1, entry_node.unsqueeze(2).expand({B, E, m.size(2)}));
}

AttentionMask KvCache::begin_block(const KvBlock& block) {
  block_slots_ = torch::Tensor();
  if (block.visible.defined()) hide_prefix_keys(block.visible);
  const auto committed = block.committed.defined() && block.entry_node.defined()
                             ? spread_committed(block.committed, block.entry_node)
                             : block.committed;
  const int64_t W = block_width(block.entries, block.mask);
  auto mask = device_lengths() ? begin_static_block(block.entries, W, block.mask, committed)
                               : begin_dynamic_block(block.entries, W, block.mask, committed);
  node_starts_ = block.node_starts;
  return mask;
}

AttentionMask KvCache::begin_dynamic_block(int64_t T, int64_t W, const torch::Tensor& block_mask,
                                           const torch::Tensor& restricted) {
  const int64_t P = extending(T, W);
  node_starts_.clear();
  const int64_t B = batch(), S = max_length() + W;
  VISPEC_ASSERT(S <= capacity_, "KV cache overflow: need ", S, " of ", capacity_, " slots");
  const auto device = k_[0].device();
  pending_ = W;
  written_from_ = P;
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
  VISPEC_ASSERT(!restricted.defined(), "a restriction of the committed entries needs rows of equal length");
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

int64_t KvCache::extending(int64_t T, int64_t W) const {
  const int64_t P = W - T;
  VISPEC_ASSERT(T >= 1 && (P == 0 || P == pending_), "a block of ", T, " entries and width ", W, " where ", pending_,
                " entries are pending (its width is T, or pending + T to extend the pending block)");
  VISPEC_ASSERT(P == 0 || node_starts_.empty(), "a block with end-of-line entries cannot be extended");
  return P;
}

int64_t KvCache::plan_static_block(int64_t T, int64_t W) {
  VISPEC_ASSERT(device_lengths(), "a static block in a cache whose lengths are on the host");
  if (planned_ == T && planned_width_ == W) return bucket_;  // the planned block again: its step run once more
  const int64_t P = extending(T, W);
  const int64_t need = max_length() + W;
  VISPEC_ASSERT(T >= 1 && need <= capacity_, "KV cache overflow: need ", need, " of ", capacity_, " slots");
  planned_ = T;
  planned_width_ = W;
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
// lets the query see block entry s - L_b. A restriction of the committed entries (KvBlock::committed, on the
// device) hides the committed keys it does not show, read through the same bucket.
AttentionMask KvCache::begin_static_block(int64_t T, int64_t width, const torch::Tensor& block_mask,
                                          torch::Tensor committed) {
  // The planned block, if a runner planned it before its step (which it may run, warm up and capture: each run
  // begins the same block), else planned now.
  const int64_t S = plan_static_block(T, width), B = batch(), P = written_from_, W = pending_;
  if (plan_check) {
    const auto device = device_lengths_now(lengths_device_);
    for (int64_t b = 0; b < B; ++b)
      VISPEC_ASSERT(length_[b] >= device[size_t(b)], "a static block planned with row ", b, " at ", length_[b],
                    " entries where the device holds ", device[size_t(b)]);
  }
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
  if (committed.defined()) {
    const auto restricted = std::move(committed);
    VISPEC_ASSERT(restricted.device() == device && restricted.size(-1) >= S,
                  "a static block's committed mask must be on the cache's device and span its bucket (", S, " slots)");
    auto seen = restricted.to(torch::kBool).narrow(-1, 0, S);
    if (seen.dim() == 2) seen = seen.unsqueeze(0);
    mask = mask.logical_and(seen.logical_or(rel.ge(0)));  // a committed key (rel < 0) only where shown
  }
  if (prefix_visible_.defined()) mask = apply_prefix_visibility(mask, prefix_visible_, slot_index_.view({B, T}));
  return {mask.unsqueeze(1)};
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

const torch::Tensor& KvCache::block_slots() const {
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

void KvCache::close_block() {
  pending_ = 0;
  written_from_ = 0;
  planned_ = 0;
  planned_width_ = 0;
  node_starts_.clear();
}

torch::Tensor KvCache::lengths_by_stream(int64_t samples) const {
  VISPEC_ASSERT(samples > 0 && batch() % samples == 0, "a commit for ", samples, " samples in a cache of ", batch(),
                " rows");
  return lengths_device_.view({batch() / samples, samples});
}

std::vector<int64_t> KvCache::every_row(const std::vector<int64_t>& per_sample) const {
  const int64_t S = int64_t(per_sample.size());
  VISPEC_ASSERT(S > 0 && batch() % S == 0, "a commit for ", S, " samples in a cache of ", batch(), " rows");
  std::vector<int64_t> rows;
  for (int64_t r = 0; r < batch(); ++r) rows.push_back(per_sample[size_t(r % S)]);
  return rows;
}

void KvCache::advance() {
  if (device_lengths()) lengths_device_.add_(pending_);
  for (size_t b = 0; b < length_.size(); ++b) length_[b] += node_starts_.empty() ? pending_ : node_starts_[b].back();
  close_block();
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

namespace {
// A dynamic cache's commit from device numbers: read, as a decoder's read is (counted by traces and profiles).
torch::Tensor read_commit(const torch::Tensor& t) {
  RECORD_FUNCTION("vispec::host_read", std::vector<c10::IValue>());
  return t.to(torch::kCPU, torch::kInt64).contiguous();
}
torch::Tensor upload_commit(const torch::Tensor& t, torch::Device device) {
  RECORD_FUNCTION("vispec::host_upload", std::vector<c10::IValue>());
  return t.to(device);
}
}  // namespace

void KvCache::advance(const torch::Tensor& counts) {
  VISPEC_ASSERT(counts.dim() == 1, "advance: counts of shape ", counts.sizes());
  if (!device_lengths()) {  // a dynamic cache: its host lengths are the truth
    const auto host = read_commit(counts);
    return advance(std::vector<int64_t>(host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + host.numel()));
  }
  VISPEC_ASSERT(node_starts_.empty() && counts.device() == lengths_device_.device(), "advance: device counts on ",
                counts.device(), " for a static cache on ", lengths_device_.device());
  lengths_by_stream(counts.numel()).add_(counts.view({1, -1}));
  for (auto& n : length_) n += pending_;  // the plan: at most the whole pending block, until settle()
  close_block();
}

void KvCache::advance(const std::vector<int64_t>& counts) {
  auto delta = every_row(counts);
  for (int64_t b = 0; b < batch(); ++b) {
    int64_t& n = delta[size_t(b)];
    if (n > 0 && !node_starts_.empty()) {  // nodes -> their entries
      VISPEC_ASSERT(n < int64_t(node_starts_[size_t(b)].size()), "advance commits ", n, " nodes");
      n = node_starts_[size_t(b)][size_t(n)];
    }
    VISPEC_ASSERT(n <= pending_ && length_[b] + n >= 0 && length_[b] + n <= capacity_, "advance of row ", b, " by ", n,
                  ": length ", length_[b], ", pending block ", pending_, ", capacity ", capacity_);
    length_[b] += n;
  }
  if (device_lengths())
    lengths_device_.add_(upload_commit(torch::tensor(delta, torch::kInt64), lengths_device_.device()));
  close_block();
}

void KvCache::keep_paths(const torch::Tensor& paths) {
  VISPEC_ASSERT(paths.dim() == 2, "keep_paths: paths of shape ", paths.sizes());
  if (!device_lengths()) {  // a dynamic cache: its host lengths are the truth
    const auto host = read_commit(paths);
    const auto h = host.accessor<int64_t, 2>();
    std::vector<std::vector<int64_t>> rows(size_t(host.size(0)));
    for (int64_t s = 0; s < host.size(0); ++s)
      for (int64_t j = 0; j < host.size(1) && h[s][j] >= 0; ++j) rows[size_t(s)].push_back(h[s][j]);
    return keep_paths(rows);
  }
  VISPEC_ASSERT(node_starts_.empty() && paths.device() == lengths_device_.device() && paths.size(1) <= capacity_,
                "keep_paths: device paths of shape ", paths.sizes(), " on ", paths.device(), " for a static cache on ",
                lengths_device_.device());
  keep_device_paths(paths);
  for (auto& n : length_) n += std::min(pending_, paths.size(1));  // the plan: an upper bound, until settle()
  close_block();
}

void KvCache::keep_paths(const std::vector<std::vector<int64_t>>& paths) {
  const int64_t S = int64_t(paths.size());
  VISPEC_ASSERT(S > 0 && batch() % S == 0, "keep_paths of ", S, " paths in a cache of ", batch(), " rows");
  std::vector<std::vector<int64_t>> entries;
  for (int64_t r = 0; r < batch(); ++r) {
    const auto& path = paths[size_t(r % S)];
    VISPEC_ASSERT(length_[r] + int64_t(path.size()) <= capacity_ &&
                      std::all_of(path.begin(), path.end(), [&](int64_t i) { return i >= 0 && i < pending_; }),
                  "keep_paths: row ", r, " keeps ", path.size(), " entries of a block of ", pending_);
    entries.push_back(entries_of(r, path));
  }
  if (!device_lengths()) {
    keep_entry_rows(entries);
    return close_block();
  }
  // A static cache: the paths uploaded, then kept as device paths are (the host plan exact).
  int64_t W = 1;
  for (const auto& e : entries) W = std::max(W, int64_t(e.size()));
  auto rows = torch::full({batch(), W}, -1, torch::kInt64);
  auto a = rows.accessor<int64_t, 2>();
  for (int64_t r = 0; r < batch(); ++r)
    for (size_t j = 0; j < entries[size_t(r)].size(); ++j) a[r][int64_t(j)] = entries[size_t(r)][j];
  keep_device_paths(upload_commit(rows, lengths_device_.device()));
  for (int64_t r = 0; r < batch(); ++r) length_[r] += int64_t(entries[size_t(r)].size());
  close_block();
}

// keep_entry_rows' moves from device numbers: row r's entry j < n_r moves from L_r + paths[s][j] to L_r + j; the
// padding past n_r repeats the last move, or, in a row that keeps nothing, copies slot min(L_r, capacity - 1)
// onto itself. Every source is gathered before anything is written. Paths of S samples apply to every stream's
// row of each (L viewed [R / S, S]), so the streams need no copy of them.
void KvCache::keep_device_paths(const torch::Tensor& paths) {
  const int64_t S = paths.size(0), W = paths.size(1);
  const auto L = lengths_by_stream(S).unsqueeze(2);         // [R / S, S, 1]
  const auto count = paths.ge(0).sum(1, /*keepdim=*/true);  // [S, 1]
  const auto last = (count - 1).clamp_min(0);
  const auto j = torch::minimum(key_index_.narrow(0, 0, W).view({1, W}), last);  // [S, W]
  const auto none = count.eq(0);
  const auto still = L.clamp_max(capacity_ - 1);
  const auto dst = torch::where(none, still, L + j);  // [R / S, S, W]
  const auto src = torch::where(none, still, L + paths.gather(1, j));
  move_entries(src.view({batch(), W}), dst.view({batch(), W}));
  lengths_by_stream(S).add_(count.view({1, S}));
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

torch::Tensor KvCache::lengths_now() const {
  return device_lengths() ? lengths_device_ : torch::tensor(length_, torch::kInt64);
}

void KvCache::settle(const std::vector<int64_t>& lengths) {
  if (!device_lengths()) return;  // a dynamic cache: its host lengths are the truth
  VISPEC_ASSERT(lengths.size() == length_.size(), "settle of ", lengths.size(), " rows in a cache of ", batch());
  for (const int64_t n : lengths)
    VISPEC_ASSERT(n >= 0 && n <= capacity_, "settle: a length of ", n, " in a cache of ", capacity_, " slots");
  VISPEC_ASSERT(!plan_check || lengths == device_lengths_now(lengths_device_),
                "settle on lengths other than the device's");
  length_ = lengths;
  close_block();
}

int64_t KvCache::bucket_for(int64_t width) const {
  const int64_t need = max_length() + width;
  return std::min(capacity_, (need + kLengthBucket - 1) / kLengthBucket * kLengthBucket);
}

void KvCache::take_rows(const KvCache& prefilled, const std::vector<int64_t>& rows, int64_t samples) {
  VISPEC_ASSERT(prefilled.batch() == batch() && samples > 0 && batch() % samples == 0 && pending_ == 0 &&
                    prefilled.pending_ == 0 && prefilled.entries_.size(0) == entries_.size(0) &&
                    prefilled.entries_.size(2) == entries_.size(2),
                "take_rows of a cache of ", prefilled.batch(), " rows into one of ", batch(), " for ", samples,
                " samples");
  std::vector<int64_t> taken;  // the rows in every stream
  for (int64_t stream = 0; stream < batch() / samples; ++stream)
    for (int64_t b : rows) {
      VISPEC_ASSERT(b >= 0 && b < samples, "take_rows of row ", b, " of ", samples);
      taken.push_back(stream * samples + b);
      length_[size_t(taken.back())] = prefilled.length_[size_t(taken.back())];
    }
  const int64_t L = prefilled.max_length();
  VISPEC_ASSERT(L <= capacity_, "take_rows of ", L, " entries into a cache of ", capacity_, " slots");
  const auto index = torch::tensor(taken, torch::kInt64).to(entries_.device());
  // One copy of every layer's keys and values: the rows' first L slots (what the prefill wrote).
  entries_.narrow(3, 0, L).index_copy_(1, index, prefilled.entries_.narrow(3, 0, L).index_select(1, index));
  if (device_lengths())
    lengths_device_.index_copy_(0, index, prefilled.lengths_now().to(index.device()).index_select(0, index));
  if (!prefilled.prefix_visible_.defined()) return;
  if (!prefix_visible_.defined()) {  // a dynamic cache's first hidden prefix: the other rows hide nothing
    prefix_visible_ = torch::ones_like(prefilled.prefix_visible_);
    prefix_hidden_ = torch::zeros({batch()}, index.options());
  }
  VISPEC_ASSERT(prefix_visible_.size(1) == prefilled.prefix_visible_.size(1), "take_rows of a hidden prefix of ",
                prefilled.prefix_visible_.size(1), " entries into one of ", prefix_visible_.size(1));
  prefix_visible_.index_copy_(0, index, prefilled.prefix_visible_.index_select(0, index));
  prefix_hidden_.index_copy_(0, index, prefilled.prefix_hidden_.index_select(0, index));
}

void KvCache::reset() {
  close_block();
  std::fill(length_.begin(), length_.end(), 0);
  if (device_lengths()) {
    // A static cache keeps its hidden-prefix tensors for the next prefill to overwrite in place (a caption or
    // prompt model hides a prefix at every prefill, a class model never).
    lengths_device_.zero_();
    return;
  }
  prefix_visible_ = torch::Tensor();
  prefix_hidden_ = torch::Tensor();
}

}  // namespace vispec
