// Where image tokens sit in the sequence when each image row ends in a forced end-of-line token (Lumina-mGPT,
// Emu3): image token k (row k / W, column k % W) is at sequence slot C + k + k / W, and the end-of-line token of
// row r at slot C + r (W + 1) + W. The decoders never see these tokens: they feed image tokens at image
// positions, and the model adds an end-of-line entry after every fed token that ends a row (but the image's
// last), so that the output it returns for that token (the one predicting the next row's first token) is the
// end-of-line entry's. The KV cache keeps a token's end-of-line entry with it (KvBlock::node_starts).
//
// A block whose rows add different numbers of entries is padded to one width: padding entries attend only to
// themselves, no entry attends to them, and no keep commits them.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace vispec {

// Whether image token k (of N, rows of W) is followed by an end-of-line token.
inline bool ends_row(int64_t k, int64_t W, int64_t N) { return k % W == W - 1 && k < N - 1; }

// A decode block of T nodes per row (the fed tokens) laid out with its end-of-line entries.
struct EolBlock {
  int64_t entries = 0;                            // T' >= T: entries per row, padding included
  torch::Tensor source;                           // [B, T'] int64: the node each entry belongs to (padding: node 0)
  torch::Tensor is_eol;                           // [B, T'] bool: an end-of-line entry
  torch::Tensor is_padding;                       // [B, T'] bool
  torch::Tensor output_entry;                     // [B, T] int64: the entry whose output is node t's
  std::vector<std::vector<int64_t>> node_starts;  // per row: T + 1 entry starts (KvBlock::node_starts)
};

// positions: [B, T] image positions of the nodes, on the host. Tensors are made on `device`.
EolBlock eol_block(const torch::Tensor& positions, int64_t W, int64_t N, torch::Device device);

// The entries' [B, T', T'] mask from the nodes' block mask ([T, T] or [B, T, T], true = may attend): an entry
// sees what its node sees; a node's end-of-line entry also sees its node, and is seen by whatever sees the node
// but the node itself; padding sees only itself.
torch::Tensor eol_block_mask(const torch::Tensor& block_mask, const EolBlock& block);

}  // namespace vispec
