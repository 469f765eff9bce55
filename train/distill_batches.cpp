#include "train/distill_batches.h"

#include "core/check.h"

namespace vispec {

namespace {
torch::Generator generator(uint64_t key) { return at::detail::createCPUGenerator(key); }

uint64_t mix(uint64_t seed, uint64_t a, uint64_t b = 0) {  // distinct generator keys per (seed, a, b)
  uint64_t h = seed * 0x9E3779B97F4A7C15ull ^ (a + 0x632BE59BD9B4E019ull) * 0xBF58476D1CE4E5B9ull;
  return h ^ ((b + 1) * 0x94D049BB133111EBull);
}

struct UnitRows {
  torch::Tensor hidden, tokens;  // [R, S, T, D], [R, T]
};

UnitRows read_units(const DistillReader& reader, const std::vector<int64_t>& offsets,
                    const std::vector<size_t>& units) {
  std::vector<torch::Tensor> hidden, tokens;
  const int64_t S = reader.streams(), T = reader.positions(), D = reader.hidden_dim();
  for (size_t u : units) {
    auto rows = reader.read(offsets[u], reader.units()[u].length);
    hidden.push_back(torch::from_blob(rows.hidden.data(), {rows.count, S, T, D}, torch::kFloat32).clone());
    tokens.push_back(torch::from_blob(rows.tokens.data(), {rows.count, T}, torch::kInt32).to(torch::kInt64));
  }
  return {torch::cat(hidden), torch::cat(tokens)};
}

std::vector<int64_t> unit_offsets(const DistillReader& reader) {
  std::vector<int64_t> offsets;
  int64_t row = 0;
  for (const auto& u : reader.units()) {
    offsets.push_back(row);
    row += u.length;
  }
  return offsets;
}
}  // namespace

void check_dataset_fits(const DistillReader& reader, const ModelConfig& target) {
  const auto& p = reader.path();
  VISPEC_CHECK(reader.model() == target.name, p, ": model is '", reader.model(), "' but ", target.file, " is '",
               target.name, "'");
  VISPEC_CHECK(reader.hidden_dim() == target.gpt.dim, p, ": hidden_dim is ", reader.hidden_dim(), " but ", target.file,
               " has gpt.dim ", target.gpt.dim);
  VISPEC_CHECK(reader.grid_size() == target.gpt.grid_size, p, ": grid_size is ", reader.grid_size(), " but ",
               target.file, " has gpt.grid_size ", target.gpt.grid_size);
}

UnitSplit split_units(const DistillReader& reader, int64_t heldout_units) {
  const int64_t n = int64_t(reader.units().size());
  const int64_t held = heldout_units > 0 ? heldout_units : std::max<int64_t>(1, n / 50);
  VISPEC_CHECK(n > held, reader.path(), ": ", n, " unit(s), so nothing is left to train on after holding out ", held,
               " (distil more samples, or lower --heldout-units)");
  UnitSplit split;
  for (int64_t i = 0; i < n; ++i) (i < n - held ? split.train : split.heldout).push_back(size_t(i));
  return split;
}

std::vector<HeadBatch> heldout_batches(const DistillReader& reader, const std::vector<size_t>& units,
                                       int64_t batch_size, int64_t max_rows) {
  auto rows = read_units(reader, unit_offsets(reader), units);
  const int64_t n = std::min<int64_t>(max_rows, rows.hidden.size(0));
  std::vector<HeadBatch> out;
  for (int64_t i = 0; i < n; i += batch_size) {
    const int64_t b = std::min(batch_size, n - i);
    out.push_back({rows.hidden.narrow(0, i, b).select(1, 0).contiguous(), rows.tokens.narrow(0, i, b)});
  }
  return out;
}

DistillBatches::DistillBatches(std::shared_ptr<const DistillReader> reader, std::vector<size_t> units,
                               int64_t batch_size, int64_t window_rows, double null_fraction, uint64_t seed,
                               BatchShard shard)
    : reader_(std::move(reader)), units_(std::move(units)), offsets_(unit_offsets(*reader_)), batch_size_(batch_size),
      window_rows_(std::max(window_rows, batch_size)),
      shard_(shard.global ? shard : BatchShard{0, batch_size, batch_size}), null_fraction_(null_fraction), seed_(seed) {
  VISPEC_ASSERT(shard_.global == batch_size_, "a shard of a batch of ", shard_.global, ", not ", batch_size_);
  VISPEC_CHECK(null_fraction_ == 0 || reader_->streams() == 2, reader_->path(),
               ": streams is 'cond' only, so there are no null-condition rows for --null-fraction ", null_fraction_,
               " (distil with streams: cond+uncond, or pass --null-fraction 0)");
  for (size_t u : units_) rows_ += reader_->units()[u].length;
  VISPEC_CHECK(rows_ >= batch_size_, reader_->path(), ": ", rows_, " training rows, fewer than --batch-size ",
               batch_size_);
}

DistillBatches::~DistillBatches() {
  if (next_.valid()) next_.wait();
}

void DistillBatches::plan_epoch(int64_t epoch) {
  auto gen = generator(mix(seed_, uint64_t(epoch)));
  const auto perm = torch::randperm(int64_t(units_.size()), gen, torch::kInt64);
  int64_t step = windows_.empty() ? 0 : windows_.back().first_step + windows_.back().steps;
  Window w;
  int64_t rows = 0;
  auto close = [&] {
    w.epoch = epoch;
    w.first_step = step;
    w.steps = rows / batch_size_;
    w.key = mix(seed_, uint64_t(epoch), windows_.size() + 1);
    step += w.steps;
    windows_.push_back(w);
    w = Window{};
    rows = 0;
  };
  for (int64_t i = 0; i < perm.size(0); ++i) {
    const size_t u = units_[size_t(perm[i].item<int64_t>())];
    w.units.push_back(u);
    rows += reader_->units()[u].length;
    if (rows >= window_rows_) close();
  }
  if (!w.units.empty()) {
    // A short last window joins the previous one of this epoch, so every window yields whole batches.
    if (rows < batch_size_ && !windows_.empty() && windows_.back().epoch == epoch) {
      auto& last = windows_.back();
      int64_t last_rows = 0;
      for (size_t u : last.units) last_rows += reader_->units()[u].length;
      last.units.insert(last.units.end(), w.units.begin(), w.units.end());
      step -= last.steps;
      last.steps = (last_rows + rows) / batch_size_;
      step += last.steps;
    } else {
      close();
    }
  }
}

size_t DistillBatches::window_of(int64_t step) {
  while (windows_.empty() || windows_.back().first_step + windows_.back().steps <= step)
    plan_epoch(windows_.empty() ? 0 : windows_.back().epoch + 1);
  size_t lo = 0, hi = windows_.size() - 1;  // the window whose [first_step, first_step + steps) holds step
  while (lo < hi) {
    const size_t mid = (lo + hi + 1) / 2;
    if (windows_[mid].first_step <= step) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

DistillBatches::Loaded DistillBatches::load(const Window& w, size_t window) const {
  // The window's rows are its units' rows in order; batch k takes rows order[k B, (k + 1) B) of them.
  std::vector<int64_t> global;  // window row -> dataset row
  for (size_t u : w.units)
    for (int64_t r = 0; r < reader_->units()[u].length; ++r) global.push_back(offsets_[u] + r);
  auto gen = generator(w.key);
  const auto order = torch::randperm(int64_t(global.size()), gen, torch::kInt64);
  // This rank's slots of every batch of the window, and the window rows they name.
  const auto slots = order.narrow(0, 0, w.steps * batch_size_)
                         .view({w.steps, batch_size_})
                         .narrow(1, shard_.first, shard_.count)
                         .reshape(-1);
  const auto [used, slot_to_used] = torch::_unique(slots, /*sorted=*/true, /*return_inverse=*/true);
  // Read in dataset order (the window's units come in shuffled order), then point each slot at its row.
  const auto [dataset_rows, by_dataset] = torch::tensor(global).index_select(0, used).sort();
  auto place = torch::empty_like(by_dataset);  // used row -> its place in the read
  place.index_put_({by_dataset}, torch::arange(by_dataset.size(0)));
  auto read = reader_->read(
      std::vector<int64_t>(dataset_rows.data_ptr<int64_t>(), dataset_rows.data_ptr<int64_t>() + dataset_rows.numel()));
  const int64_t S = reader_->streams(), T = reader_->positions(), D = reader_->hidden_dim(), M = read.count;
  return {window, torch::from_blob(read.hidden.data(), {M, S, T, D}, torch::kFloat32).clone(),
          torch::from_blob(read.tokens.data(), {M, T}, torch::kInt32).to(torch::kInt64),
          place.index_select(0, slot_to_used)};
}

HeadBatch DistillBatches::batch(int64_t step) {
  const size_t w = window_of(step);
  if (current_.window != w) {
    if (next_.valid() && next_window_ == w) {
      current_ = next_.get();
    } else {
      if (next_.valid()) next_.wait();
      current_ = load(windows_[w], w);
    }
    rows_read_ += current_.hidden.size(0);
    window_of(windows_[w].first_step + windows_[w].steps);  // plan the next window before the thread reads it
    next_window_ = w + 1;
    // The thread gets its own copy of the window: windows_ may grow meanwhile. It is the only HDF5 caller
    // while it runs (batch() waits for it before reading itself).
    next_ =
        std::async(std::launch::async, [this, win = windows_[next_window_], n = next_window_] { return load(win, n); });
  }
  const int64_t k = step - windows_[w].first_step;
  const auto rows = current_.slots.narrow(0, k * shard_.count, shard_.count);
  auto hidden = current_.hidden.index_select(0, rows);  // [b, S, T, D]
  auto stream = torch::zeros({shard_.count}, torch::kInt64);
  if (null_fraction_ > 0) {  // drawn for the whole batch, so a row's stream does not depend on the rank count
    auto gen = generator(mix(seed_ + 1, uint64_t(step)));
    stream = shard_.rows(torch::rand({batch_size_}, gen).lt(null_fraction_).to(torch::kInt64));
  }
  hidden = hidden.gather(1, stream.view({-1, 1, 1, 1}).expand({-1, 1, hidden.size(2), hidden.size(3)})).squeeze(1);
  return {hidden, current_.tokens.index_select(0, rows)};
}

}  // namespace vispec
