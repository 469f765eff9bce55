// What a decoder keeps per row while it decodes, on the decoders' device: the token grid, how many tokens each
// row has committed, the row's random streams and its sample's statistics. Decode loops index these with tensor
// operations over all rows at once (nothing loops over rows issuing kernels) and read back one small tensor per
// iteration, through read_to_host(): the only place a decoder waits for the device. A stop request
// (core/stop_signal.h) ends the loop before the next iteration; the caller abandons the result.
//
// Rows and samples: a request may hold more samples than rows (DecodeRequest::rows). The rows start with its
// first samples; in a decoder that refills rows (continuous batching), a row whose image is done gives its tokens
// back and takes the next sample, its state restarted, while the other rows go on: the batch keeps its shape
// (graphs stay static), and a sample's randomness is keyed by its id and positions, and its draws by its own
// iterations, so its tokens do not depend on the row or the iteration it started at.
#pragma once

#include <ATen/record_function.h>
#include <torch/torch.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/rng.h"
#include "decoding/common/decoder.h"
#include "decoding/common/sampling_params.h"

namespace vispec {

struct ChainVerdict;
struct TreeVerdict;
class KvCache;

// A device-to-host copy that a decoder waits for, recorded as "vispec::host_read" so profiles and the op-count
// tests see every one (item() shows up as aten::_local_scalar_dense).
torch::Tensor read_to_host(const torch::Tensor& t);
// A host-to-device copy into a buffer that never moves (the inputs a decoder plans on the host before a step
// that a graph replays), recorded as "vispec::host_upload" for the traces and profiles. On CUDA it goes through
// pinned memory without waiting for the device.
void upload_to(const torch::Tensor& buffer, const torch::Tensor& host);
// A float64 tensor can share one read with int64 ones as its bits (t.view(torch::kInt64)); this undoes that
// for one element.
inline double double_from_bits(int64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

// Token 0 of every sample from the prefill's guided logits [B, C, V] (the last position's), drawn as AR draws
// it: the kSample uniform at position 0 (the argmax at T = 0). [B] int64 on the logits' device.
torch::Tensor first_tokens(const torch::Tensor& prefill_logits, const SamplingParams& params, uint64_t seed,
                           const torch::Tensor& sample_ids);

// Rows taking samples: rows[i] takes sample samples[i] of the request. Every row at a decode's start, then the
// rows whose images are done while samples are left. `conditions` has a row per row of the batch, each new
// sample's at its row and a copy of the first one's at the others: the new samples' prefills run at the batch's
// width, each at its own row, so that they compute exactly as they would have at the batch's start (a matrix
// product's rounding can depend on its row count); the decoder keeps the rows that take samples.
struct RowFill {
  std::vector<int64_t> rows, samples;
  Conditions conditions;
  int64_t size() const { return int64_t(rows.size()); }
};

class DecodeState {
 public:
  // The device tensors of the decode state. A decoder whose iterations are replayed as CUDA graphs
  // (decoding/common/iteration_graphs.h) keeps one set per batch shape and hands it to every decode of that shape,
  // which writes it in place: a graph finds the state where it was captured.
  struct Buffers {
    torch::Tensor tokens, n, iteration, sample_ids;
    torch::Tensor read;  // [B, 3 + path_width + kLengthColumns] int64: what the host reads after an iteration
  };
  // Columns of the read that bring static caches' device lengths back with the commit's (read_lengths_on_device): one
  // per stream of each cache, e.g. a target and a drafter under CFG take four.
  static constexpr int64_t kLengthColumns = 8;
  // `pad` columns past the image take writes that fall beyond it (a chain of G drafts: G + 1). path_width: for
  // a tree decoder, the widest walk verdict's path (TreeVerdict::path's columns), which its commit reads.
  // buffers: where the state lives (made there on first use); null: tensors of this decode's own.
  DecodeState(const DecodeRequest& request, int64_t cells, int64_t pad, torch::Device device,
              Buffers* buffers = nullptr, int64_t path_width = 0);

  int64_t batch() const { return int64_t(committed.size()); }  // rows
  int64_t cells() const { return cells_; }
  // Rows with cells still to commit below `limit` (-1: the image), as of the last read.
  std::vector<int64_t> active(int64_t limit = -1) const;

  // Raster positions n[b] + offset + j, j < count, clamped to the image: [B, count] int64 on the device.
  torch::Tensor positions(int64_t offset, int64_t count) const;
  // positions(first, count) computed once, and any run of them as a view: an iteration that reads several runs of
  // its cells (the newest, the drafts', the verify block's, the uniforms') asks once, where each call of
  // positions() is three kernels.
  struct Span {
    torch::Tensor all;  // [B, count]
    int64_t first = 0;
    torch::Tensor at(int64_t offset, int64_t count) const { return all.narrow(1, offset - first, count); }
  };
  Span span(int64_t first, int64_t count) const { return {positions(first, count), first}; }
  // Every row's uniforms at `positions` [B, C] for `purpose`, draw index `draw` (a host number, or device draws
  // that broadcast to [B, C], such as each row's `iteration` as [B, 1], so that the iteration's operators stay
  // the same).
  torch::Tensor uniforms(const torch::Tensor& positions, Purpose purpose, int64_t draw = 0) const;
  torch::Tensor uniforms(const torch::Tensor& positions, Purpose purpose, const torch::Tensor& draw) const;
  // The tokens at n[b] + offset, [B, 1] (offset -1: each row's newest token).
  torch::Tensor tokens_at(int64_t offset) const;

  // Every row has committed its first `count` tokens (after the prefill's first token: 1).
  void set_committed(int64_t count);
  // Token 0 of every row (first_tokens); every row has then committed 1 token.
  void start(const torch::Tensor& prefill_logits, const SamplingParams& params);
  // The same for the rows of `fill`, from the prefill logits of fill.conditions [B, C, V].
  void start(const RowFill& fill, const torch::Tensor& prefill_logits, const SamplingParams& params);
  // Each row's newest token's raster index (its tree's root), as of the last read: committed - 1.
  std::vector<int64_t> newest_index() const;
  // The decode loop: `while (rows.next_iteration())` runs iterations while a row has committed fewer than
  // `limit` cells (-1: the image). Each iteration is recorded as "vispec::iteration" (the unit of the trace
  // tests and of profiles) and counted in `iteration` on the device, and in every row's statistics
  // (batch_iterations; idle_iterations where the row had reached the limit: it sits the iteration out).
  bool next_iteration(int64_t limit = -1);
  // The loop of a decoder that refills rows: before each iteration, the rows whose images are done give their
  // tokens back (one read) and take the next samples, and `start` starts them (their prefills into the rows'
  // caches, their token 0 through start(fill, ...), the decoder's own state of those rows restarted); at the
  // first call every row takes its sample. Runs iterations while a row has an image to finish.
  bool next_iteration(const std::function<void(const RowFill&)>& start);
  // The statistics of the sample in `row` (a row that sits idle, its last sample's), and the samples in `rows`:
  // what a PhaseClock charges (its rows are the samples').
  SampleStats& stats_of(int64_t row) { return stats[size_t(sample_in(row))]; }
  std::vector<int64_t> samples_of(const std::vector<int64_t>& rows) const;

  // Every commit comes in two halves, so that an iteration can be replayed as one graph: the device half (inside
  // the graph) writes the tokens, advances n and leaves what the host needs in a buffer that never moves; the
  // host half (after the graph) reads that buffer, the iteration's only wait, and counts the statistics of the
  // rows that were below the limit.
  //
  // The chain decoders' commit (SD, SJD, SSD's first row) after a chain verdict on drafts [B, G]: each row's
  // accepted drafts and next token written at its next cells below `limit` (the image's end, or its image
  // row's), the row advanced by as many (count [B]: the drafts it verified, for the statistics). The advances
  // are also the block entries each row keeps, [newest, accepted drafts] (a row reaching `limit` keeps none past
  // it): the device half returns them on the device (a view of the buffer), the host half on both.
  struct Advance {
    torch::Tensor on_device;    // [B] int64
    std::vector<int64_t> host;  // the same
  };
  torch::Tensor commit_chain_on_device(const torch::Tensor& drafts, const ChainVerdict& verdict,
                                       const torch::Tensor& count, int64_t limit);
  // The commit of a decoder that writes its rows' cells itself (SSD's later rows, corrected in place): every row
  // advanced by advance [B], the read's columns a chain commit's (accepted, count [B]: the statistics);
  // settle_chain reads them.
  void commit_cells_on_device(const torch::Tensor& advance, const torch::Tensor& accepted, const torch::Tensor& count);
  Advance settle_chain(int64_t limit);
  // The tree decoders' commit (EAGLE-1/2, LANTERN, ADT-Tree) after a walk (decoding/common/verify.h) of trees whose
  // node tokens are node_tokens [B, T]: the accepted path after the root is a chain, written with the sampled
  // token as a chain's (the pad must hold T columns), its statistics counted (drafted: the children tested);
  // the verdict's paths wait in the read buffer (its path_width columns). settle_tree returns each row's
  // accepted path, root first (empty for rows that had finished).
  void commit_tree_on_device(const TreeVerdict& verdict, const torch::Tensor& node_tokens);
  std::vector<std::vector<int64_t>> settle_tree();
  // The caches' lengths in the iteration's one read, in two halves, as every commit: at the end of the device
  // half (inside a graph), the device lengths of `caches` (those that have them) copied beside the commit's
  // columns; on the host, before or after it but outside it (a replay runs no host code), the same caches
  // named, so that the read (settle_chain, settle_tree) settles each cache's host plan on its lengths
  // (KvCache::settle). Pointers valid until that read.
  void read_lengths_on_device(const std::vector<KvCache*>& caches);
  void settle_lengths_at_read(const std::vector<KvCache*>& caches);

  // A decoder's own figures per sample, summed on the device (GSD's distortion bound): `figures` [B, names]
  // float64 on the device (IterationGraphs::state's, for a replayed iteration), which the device half adds to in
  // place. It is zeroed here and for each row that takes a sample; when a row's image is done its row is read with
  // its tokens (one more read, where the host waits already) into the sample's statistics, extra[name].
  void keep_figures(const torch::Tensor& figures, std::vector<std::string> names);

  // Every sample's tokens [samples, cells] on the CPU and its statistics (`tokens` set).
  DecodeResult result();

  torch::Tensor tokens;            // [B, cells + pad] int64, device
  torch::Tensor n;                 // [B] int64, device: tokens committed per row (updated in place)
  torch::Tensor iteration;         // [B] int64, device: each row's iterations on its sample, from 0 (-1 before)
  std::vector<int64_t> committed;  // n as of the last read
  std::vector<SampleStats> stats;  // per sample of the request

 private:
  // What both commits share, in two halves: the chain written at n, n advanced (not past `limit`), and the
  // columns [B, 3 + E] to read (advance, accepted, `count`, `extra` [B, E] int64); then the host's bookkeeping
  // from their host copy (rows `below` the limit, as of the last read, get statistics).
  torch::Tensor commit_on_device(const torch::Tensor& drafts, const ChainVerdict& verdict, const torch::Tensor& count,
                                 int64_t limit, const torch::Tensor& extra);
  void settle(const torch::Tensor& host, const std::vector<int64_t>& below, Advance& advance);

  // The caches whose lengths the read brings, each with its first column in it.
  std::vector<std::pair<KvCache*, int64_t>> length_columns(const std::vector<KvCache*>& caches) const;
  // Settles the caches of settle_lengths_at_read from the host copy of the read.
  void settle_lengths(const torch::Tensor& host);
  // The sample in `row`, or the last one it held.
  int64_t sample_in(int64_t row) const {
    return sample_of_[size_t(row)] >= 0 ? sample_of_[size_t(row)] : last_of_[size_t(row)];
  }
  // Counts the iteration that starts now in every row's statistics and records it (false: no row is below limit).
  bool begin_iteration(int64_t limit);
  // The tokens of the samples in `rows` (their images done) read back into tokens_out_; the rows then hold none.
  void give_back(const std::vector<int64_t>& rows);

  int64_t cells_;
  int64_t path_width_;
  uint64_t seed_;
  const DecodeRequest* request_;
  torch::Tensor sample_ids_;                  // [B] int64, device
  std::vector<int64_t> all_rows_;             // 0 .. B - 1
  std::vector<int64_t> sample_of_, last_of_;  // per row: its sample (-1: none), the last it held
  int64_t next_sample_ = 0;                   // the next sample a row takes
  bool started_ = false;                      // next_iteration(start) has started the first rows
  torch::Tensor tokens_out_;                  // [samples, cells] int64, CPU: the images given back
  torch::Tensor read_;                        // [B, 3 + path_width + kLengthColumns] int64, device
  torch::Tensor figures_;                     // keep_figures': [B, names] float64, device
  std::vector<std::string> figure_names_;
  std::vector<std::pair<KvCache*, int64_t>> settling_;  // settle_lengths_at_read's, with their columns
  std::optional<at::RecordFunction> iteration_record_;  // the current "vispec::iteration"
};

}  // namespace vispec
