// What a decoder keeps per row while it decodes, on the decoders' device: the token grid, how many tokens each
// row has committed, the row's random streams and its statistics. Decode loops index these with tensor
// operations over all rows at once (nothing loops over rows issuing kernels) and read back one small tensor per
// iteration, through read_to_host(): the only place a decoder waits for the device.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/rng.h"
#include "decoding/decoder.h"
#include "decoding/sampling_params.h"

namespace vispec {

// A device-to-host copy that a decoder waits for, recorded as "vispec::host_read" so profiles and the op-count
// tests see every one (item() shows up as aten::_local_scalar_dense).
torch::Tensor read_to_host(const torch::Tensor& t);
// A float64 tensor can share one read with int64 ones as its bits (t.view(torch::kInt64)); this undoes that
// for one element.
inline double double_from_bits(int64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

class DecodeRows {
 public:
  // `pad` columns past the image take writes that fall beyond it (a chain of G drafts: G + 1).
  DecodeRows(const DecodeRequest& request, int64_t cells, int64_t pad, torch::Device device);

  int64_t batch() const { return int64_t(committed.size()); }
  int64_t cells() const { return cells_; }
  // Rows with tokens still to commit, as of the last read.
  std::vector<int64_t> active() const;

  // Raster positions n[b] + offset + j, j < count, clamped to the image: [B, count] int64 on the device.
  torch::Tensor positions(int64_t offset, int64_t count) const;
  // Every row's uniforms at `positions` [B, C] for `purpose` (draw index `draw`, or per entry `draws`).
  torch::Tensor uniforms(const torch::Tensor& positions, Purpose purpose, int64_t draw = 0) const;
  // The tokens at n[b] + offset, [B, 1] (offset -1: each row's newest token).
  torch::Tensor tokens_at(int64_t offset) const;

  // Every row has committed its first `count` tokens (after the prefill's first token: 1).
  void set_committed(int64_t count);
  // Token 0 of every row from the prefill's guided logits [B, C, V] (the last position's), drawn as AR draws
  // it (the kSample uniform at position 0); every row has then committed 1 token.
  void start(const torch::Tensor& prefill_logits, const SamplingParams& params);
  // The iteration's commit: columns [B, K] int64 on the device, column 0 how far each row advances (0 for
  // finished rows), the others whatever the caller's bookkeeping needs (accepted counts). One read brings
  // them to the host, [B, K] on the CPU; `committed` follows.
  torch::Tensor advance(const torch::Tensor& columns);

  // tokens [B, cells] on the CPU and the statistics, every row's `tokens` set.
  DecodeResult result();

  torch::Tensor tokens;                  // [B, cells + pad] int64, device
  torch::Tensor n;                       // [B] int64, device: tokens committed per row
  std::vector<int64_t> committed;        // n as of the last read
  std::vector<SampleStats> stats;

 private:
  int64_t cells_;
  uint64_t seed_;
  torch::Tensor sample_ids_;  // [B] int64, device
};

}  // namespace vispec
