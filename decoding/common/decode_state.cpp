#include "decoding/common/decode_state.h"

#include <ATen/record_function.h>

#include <algorithm>

#include "core/check.h"
#include "core/stop_signal.h"
#include "decoding/common/sampler.h"
#include "decoding/common/verify.h"
#include "kernels/keyed_uniforms.h"
#include "models/gpt/kv_cache.h"
#include "models/gpt/step_graph.h"

namespace vispec {

torch::Tensor read_to_host(const torch::Tensor& t) {
  RECORD_FUNCTION("vispec::host_read", std::vector<c10::IValue>());
  return t.to(torch::kCPU);
}

void upload_to(const torch::Tensor& buffer, const torch::Tensor& host) {
  RECORD_FUNCTION("vispec::host_upload", std::vector<c10::IValue>());
  if (!buffer.is_cuda()) {
    buffer.copy_(host);
    return;
  }
  // The caching host allocator keeps the pinned block until the copy has run, so the host goes on at once.
  buffer.copy_(host.pin_memory(), /*non_blocking=*/true);
}

DecodeState::DecodeState(const DecodeRequest& request, int64_t cells, int64_t pad, torch::Device device,
                         Buffers* buffers, int64_t path_width)
    : committed(size_t(request.row_count()), 0), stats(size_t(request.batch())), cells_(cells), path_width_(path_width),
      seed_(request.seed), request_(&request) {
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(device);
  const int64_t B = request.row_count();
  Buffers own;
  auto& b = buffers ? *buffers : own;
  if (!b.tokens.defined() || b.tokens.size(0) != B || b.tokens.size(1) != cells + pad || b.tokens.device() != device ||
      b.read.size(1) != 3 + path_width + kLengthColumns) {
    b.tokens = torch::empty({B, cells + pad}, i64);
    b.n = torch::empty({B}, i64);
    b.iteration = torch::empty({B}, i64);
    b.sample_ids = torch::empty({B}, i64);
    b.read = torch::zeros({B, 3 + path_width + kLengthColumns}, i64);
  }
  // In place: a decode of this shape after another leaves every buffer where it was.
  tokens = b.tokens.zero_();
  n = b.n.zero_();
  iteration = b.iteration.fill_(-1);
  // Row b starts with sample b.
  std::vector<int64_t> ids(request.sample_ids.begin(), request.sample_ids.begin() + B);
  sample_ids_ = b.sample_ids.copy_(torch::tensor(ids, torch::kInt64));
  read_ = b.read;
  for (int64_t r = 0; r < B; ++r) all_rows_.push_back(r);
  sample_of_ = last_of_ = all_rows_;
  next_sample_ = B;
  tokens_out_ = torch::zeros({request.batch(), cells}, torch::kInt64);
}

std::vector<int64_t> DecodeState::samples_of(const std::vector<int64_t>& rows) const {
  std::vector<int64_t> samples;
  for (int64_t b : rows) samples.push_back(sample_in(b));
  return samples;
}

std::vector<int64_t> DecodeState::active(int64_t limit) const {
  if (limit < 0) limit = cells_;
  std::vector<int64_t> rows;
  for (int64_t b = 0; b < batch(); ++b)
    if (committed[size_t(b)] < limit) rows.push_back(b);
  return rows;
}

torch::Tensor DecodeState::positions(int64_t offset, int64_t count) const {
  const auto j = torch::arange(offset, offset + count, n.options());
  return (n.view({-1, 1}) + j.view({1, -1})).clamp(0, cells_ - 1);
}

torch::Tensor DecodeState::uniforms(const torch::Tensor& positions, Purpose purpose, int64_t draw) const {
  return uniforms_at(seed_, sample_ids_, positions, purpose,
                     draw ? torch::full_like(positions, draw) : torch::Tensor());
}

torch::Tensor DecodeState::uniforms(const torch::Tensor& positions, Purpose purpose, const torch::Tensor& draw) const {
  return uniforms_at(seed_, sample_ids_, positions, purpose, draw.expand_as(positions));
}

torch::Tensor DecodeState::tokens_at(int64_t offset) const {
  return tokens.gather(1, (n + offset).clamp(0, cells_ - 1).view({-1, 1}));
}

torch::Tensor first_tokens(const torch::Tensor& prefill_logits, const SamplingParams& params, uint64_t seed,
                           const torch::Tensor& sample_ids) {
  const auto position = torch::zeros({sample_ids.size(0), 1}, sample_ids.options());
  const auto u = uniforms_at(seed, sample_ids, position, Purpose::kSample, torch::Tensor()).select(1, 0);
  return next_tokens(prefill_logits.select(1, prefill_logits.size(1) - 1), params, u);
}

void DecodeState::start(const torch::Tensor& prefill_logits, const SamplingParams& params) {
  tokens.select(1, 0).copy_(first_tokens(prefill_logits, params, seed_, sample_ids_));
  set_committed(1);
}

void DecodeState::start(const RowFill& fill, const torch::Tensor& prefill_logits, const SamplingParams& params) {
  if (fill.size() == batch()) {  // every row, in order: the batch's start
    start(prefill_logits, params);
    return;
  }
  const auto index = torch::tensor(fill.rows, torch::kInt64).to(n.device());
  tokens.select(1, 0).index_copy_(0, index,
                                  first_tokens(prefill_logits, params, seed_, sample_ids_).index_select(0, index));
  n.index_fill_(0, index, 1);
  for (int64_t b : fill.rows) committed[size_t(b)] = 1;
}

std::vector<int64_t> DecodeState::newest_index() const {
  std::vector<int64_t> index(committed);
  for (auto& i : index) i -= 1;
  return index;
}

void DecodeState::set_committed(int64_t count) {
  n.fill_(count);
  std::fill(committed.begin(), committed.end(), count);
}

bool DecodeState::next_iteration(int64_t limit) {
  VISPEC_ASSERT(request_->batch() == batch(), "a decoder that does not refill rows given ", request_->batch(),
                " samples for ", batch(), " rows (decode_in_rows cuts them into batches)");
  iteration_record_.reset();  // ends the last iteration's record
  return begin_iteration(limit < 0 ? cells_ : limit);
}

bool DecodeState::next_iteration(const std::function<void(const RowFill&)>& start) {
  iteration_record_.reset();
  RowFill fill;
  if (!started_) {
    started_ = true;
    fill.rows = all_rows_;
    fill.samples = sample_of_;
  } else {
    std::vector<int64_t> done;
    for (int64_t b = 0; b < batch(); ++b)
      if (sample_of_[size_t(b)] >= 0 && committed[size_t(b)] >= cells_) done.push_back(b);
    if (!done.empty()) give_back(done);
    for (int64_t b : done) {
      if (next_sample_ >= request_->batch()) break;
      fill.rows.push_back(b);
      fill.samples.push_back(next_sample_++);
    }
    if (!fill.rows.empty()) {  // the rows' state restarted on the device, in place
      const auto index = torch::tensor(fill.rows, torch::kInt64).to(n.device());
      std::vector<int64_t> ids;
      for (int64_t s : fill.samples) ids.push_back(int64_t(request_->sample_ids[size_t(s)]));
      tokens.index_fill_(0, index, 0);
      if (figures_.defined()) figures_.index_fill_(0, index, 0.0);
      n.index_fill_(0, index, 0);
      iteration.index_fill_(0, index, -1);
      sample_ids_.index_copy_(0, index, torch::tensor(ids, torch::kInt64).to(n.device()));
      for (size_t i = 0; i < fill.rows.size(); ++i) {
        sample_of_[size_t(fill.rows[i])] = last_of_[size_t(fill.rows[i])] = fill.samples[i];
        committed[size_t(fill.rows[i])] = 0;
      }
    }
  }
  if (!fill.rows.empty()) {
    std::vector<int64_t> of_row(size_t(batch()), fill.samples.front());
    for (size_t i = 0; i < fill.rows.size(); ++i) of_row[size_t(fill.rows[i])] = fill.samples[i];
    fill.conditions = of_row == all_rows_ && request_->batch() == batch() ? request_->conditions
                                                                          : request_->conditions.select(of_row);
    start(fill);
  }
  return begin_iteration(cells_);
}

void DecodeState::give_back(const std::vector<int64_t>& rows) {
  const bool all = rows == all_rows_;
  const auto index = torch::tensor(rows, torch::kInt64);
  // One read for all of them (every row in order: the image block itself, as a decode without refills ends).
  const auto host = read_to_host(all ? tokens.narrow(1, 0, cells_)
                                     : tokens.index_select(0, index.to(n.device())).narrow(1, 0, cells_))
                        .contiguous();
  const auto samples = samples_of(rows);
  tokens_out_.index_copy_(0, torch::tensor(samples, torch::kInt64), host);
  for (size_t i = 0; i < rows.size(); ++i) {
    stats[size_t(samples[i])].tokens = cells_;
    sample_of_[size_t(rows[i])] = -1;
  }
  if (!figures_.defined()) return;
  const auto figures = read_to_host(all ? figures_ : figures_.index_select(0, index.to(n.device())));
  const auto value = figures.accessor<double, 2>();
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t f = 0; f < figure_names_.size(); ++f)
      stats[size_t(samples[i])].extra[figure_names_[f]] += value[int64_t(i)][int64_t(f)];
}

void DecodeState::keep_figures(const torch::Tensor& figures, std::vector<std::string> names) {
  VISPEC_ASSERT(figures.dim() == 2 && figures.size(0) == batch() && figures.size(1) == int64_t(names.size()) &&
                    figures.scalar_type() == torch::kFloat64,
                "a decoder's figures are [rows, names] float64");
  figures_ = figures.zero_();
  figure_names_ = std::move(names);
}

bool DecodeState::begin_iteration(int64_t limit) {
  // A stop (core/stop_signal.h) ends the decode here: its caller abandons what it returns.
  if (active(limit).empty() || stop_requested()) return false;
  for (int64_t b = 0; b < batch(); ++b) {
    auto& s = stats_of(b);
    s.batch_iterations += 1;
    s.idle_iterations += committed[size_t(b)] >= limit ? 1 : 0;
  }
  iteration_record_.emplace(at::RecordScope::USER_SCOPE);
  if (iteration_record_->isActive()) iteration_record_->before("vispec::iteration");
  iteration.add_(1);
  return true;
}

torch::Tensor DecodeState::commit_on_device(const torch::Tensor& drafts, const ChainVerdict& verdict,
                                            const torch::Tensor& count, int64_t limit, const torch::Tensor& extra) {
  ::vispec::commit_chain(tokens, n, limit, drafts, verdict);
  const auto advance = torch::minimum(verdict.accepted + 1, limit - n);  // no token past the limit
  n.add_(advance);
  auto columns = torch::stack({advance, verdict.accepted, count}, 1);
  if (extra.defined()) columns = torch::cat({columns, extra}, 1);
  return columns;
}

torch::Tensor DecodeState::commit_chain_on_device(const torch::Tensor& drafts, const ChainVerdict& verdict,
                                                  const torch::Tensor& count, int64_t limit) {
  read_.narrow(1, 0, 3).copy_(commit_on_device(drafts, verdict, count, limit, torch::Tensor()));
  return read_.select(1, 0);
}

void DecodeState::commit_cells_on_device(const torch::Tensor& advance, const torch::Tensor& accepted,
                                         const torch::Tensor& count) {
  n.add_(advance);
  read_.narrow(1, 0, 3).copy_(torch::stack({advance, accepted, count}, 1));
}

DecodeState::Advance DecodeState::settle_chain(int64_t limit) {
  Advance advance;
  advance.on_device = read_.select(1, 0);
  const auto host = read_to_host(settling_.empty() ? read_.narrow(1, 0, 3) : read_).contiguous();
  settle(host, active(limit), advance);
  settle_lengths(host);
  return advance;
}

std::vector<std::pair<KvCache*, int64_t>> DecodeState::length_columns(const std::vector<KvCache*>& caches) const {
  std::vector<std::pair<KvCache*, int64_t>> columns;
  const int64_t B = batch();
  int64_t column = 3 + path_width_;
  for (auto* c : caches) {
    if (!c->device_lengths()) continue;  // a dynamic cache: its host lengths are the truth
    const int64_t streams = c->batch() / B;
    VISPEC_ASSERT(c->batch() % B == 0 && column + streams <= read_.size(1), "the read of ", B,
                  " rows has no room for the lengths of a cache of ", c->batch());
    columns.emplace_back(c, column);
    column += streams;
  }
  return columns;
}

void DecodeState::read_lengths_on_device(const std::vector<KvCache*>& caches) {
  const int64_t B = batch();
  for (const auto& [c, column] : length_columns(caches)) {
    const int64_t streams = c->batch() / B;
    read_.narrow(1, column, streams).copy_(c->lengths_on_device().view({streams, B}).t());
  }
}

void DecodeState::settle_lengths_at_read(const std::vector<KvCache*>& caches) {
  VISPEC_ASSERT(!inside_step(), "settle_lengths_at_read inside a step, which a replay would skip");
  settling_ = length_columns(caches);
}

void DecodeState::settle_lengths(const torch::Tensor& host) {
  const auto h = host.accessor<int64_t, 2>();
  const int64_t B = batch();
  for (const auto& [cache, column] : settling_) {
    std::vector<int64_t> lengths(size_t(cache->batch()));
    for (int64_t r = 0; r < cache->batch(); ++r) lengths[size_t(r)] = h[r % B][column + r / B];
    cache->settle(lengths);
  }
  settling_.clear();
}

void DecodeState::settle(const torch::Tensor& host, const std::vector<int64_t>& below, Advance& advance) {
  const auto a = host.accessor<int64_t, 2>();
  advance.host.assign(size_t(batch()), 0);
  for (int64_t b = 0; b < batch(); ++b) {
    advance.host[size_t(b)] = a[b][0];
    committed[size_t(b)] += a[b][0];
  }
  for (int64_t b : below) {
    stats_of(b).accepted += a[b][1];
    stats_of(b).drafted += a[b][2];
  }
}

void DecodeState::commit_tree_on_device(const TreeVerdict& verdict, const torch::Tensor& node_tokens) {
  const int64_t P = verdict.path.size(1);
  VISPEC_ASSERT(P <= path_width_, "a walk's paths of ", P, " entries where the decode rows read ", path_width_);
  // The accepted nodes after the root, as a chain of drafts (-1 past the path's end reads the root: never kept).
  const auto drafts = node_tokens.gather(1, verdict.path.narrow(1, 1, P - 1).clamp_min(0));
  read_.narrow(1, 0, 3 + P)
      .copy_(
          commit_on_device(drafts, ChainVerdict{verdict.accepted, verdict.next}, verdict.tried, cells_, verdict.path));
  if (P < path_width_) read_.narrow(1, 3 + P, path_width_ - P).fill_(-1);
}

std::vector<std::vector<int64_t>> DecodeState::settle_tree() {
  const auto walked = active();
  Advance advance;
  const auto host = read_to_host(read_).contiguous();
  settle(host, walked, advance);
  settle_lengths(host);
  const auto h = host.accessor<int64_t, 2>();
  std::vector<std::vector<int64_t>> paths(static_cast<size_t>(batch()));
  for (int64_t b : walked)
    for (int64_t j = 3; j < 3 + path_width_ && h[b][j] >= 0; ++j) paths[size_t(b)].push_back(h[b][j]);
  return paths;
}

DecodeResult DecodeState::result() {
  std::vector<int64_t> holding;  // rows whose samples' tokens are still here
  for (int64_t b = 0; b < batch(); ++b)
    if (sample_of_[size_t(b)] >= 0) holding.push_back(b);
  if (!holding.empty()) give_back(holding);
  return {tokens_out_, stats};
}

}  // namespace vispec
