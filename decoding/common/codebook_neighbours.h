// LANTERN's latent-proximity table: nn[c][j] is the j-th nearest OTHER code to code c, by L2 distance between
// the raw codebook weights (LANTERN's generate_codebook.py: raw embedding.weight, no normalisation, self
// excluded, ascending distance). Only the first `columns` neighbours are kept (rules read k of them).
// Built once per VQ model and cached as .npy under a key made of the codebook's bytes, so any process on
// any rank that asks for the same codebook reads the same file; a cached file is checked against the codebook
// before it is used.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace vispec {

class CodebookNeighbours {
 public:
  CodebookNeighbours() = default;
  // codebook [N, E]; columns <= N - 1.
  static CodebookNeighbours build(const torch::Tensor& codebook, int64_t columns);
  // Reads cache_dir/codebook-neighbours-<hash>-<N>x<columns>.npy, or builds it and writes it there (atomic
  // rename, so concurrent ranks at worst build it twice). Empty cache_dir: build without caching.
  static CodebookNeighbours cached(const torch::Tensor& codebook, int64_t columns, const std::string& cache_dir);
  // Why this table cannot be `codebook`'s (checked on sixteen rows; a cached file is checked before use, and
  // built again if it fails), or "" if it can.
  std::string disagrees_with(const torch::Tensor& codebook) const;
  // $VISPEC_CACHE, else $XDG_CACHE_HOME/vispec, else $HOME/.cache/vispec.
  static std::string default_cache_dir();

  int64_t codes() const { return codes_; }
  int64_t columns() const { return columns_; }
  const int32_t* row(int64_t code) const { return table_.data() + code * columns_; }
  // The whole table as [codes, columns] int64 on `device`, for the batched rules (decoding/common/acceptance.h).
  torch::Tensor tensor(torch::Device device) const;

 private:
  int64_t codes_ = 0, columns_ = 0;
  std::vector<int32_t> table_;
};

}  // namespace vispec
