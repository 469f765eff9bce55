// Attention over a layer's key/value caches in one operator (vispec::attend_cache), whatever runs inside it: part
// of a transformer layer's fused path (models/gpt/gpt.cpp's forward_fused), which the layer chooses. On the CPU,
// and on CUDA where its kernel does not apply, LibTorch's fused attention over a narrowed view of the caches; on
// CUDA otherwise the kernel of kernels/attend_cache.cu.
#pragma once

#include <cstdint>
#include <optional>

namespace at {
class Tensor;
}

namespace vispec::kernels {

// q [B, H, T, Dh] over the first `keys` slots of caches [B, Hkv, S, Dh], mask [B or 1, 1, T, keys] bool (true = may
// attend) or none (then `causal` within the block, or every key). Returns [B, T, H Dh], the layout the output
// projection reads.
at::Tensor attend_cache(const at::Tensor& q, const at::Tensor& k_cache, const at::Tensor& v_cache, int64_t keys,
                        const std::optional<at::Tensor>& mask, bool causal);

namespace cuda {

// The launcher's arguments (kernels/attend_cache.cu): q [B, H, T, Dh] and the caches [B, Hkv, S, Dh] contiguous (the
// caches 16-byte aligned), over their first `keys` slots, mask (or nullptr: every key) a bool at mask + b mask_b +
// t mask_t + key mask_k (stride 0 where broadcast) -> out [B, T, H, Dh]; scale multiplies q . k.
struct AttendArgs {
  const void* q;
  const void* k_cache;
  const void* v_cache;
  const bool* mask;
  void* out;
  int64_t B, H, Hkv, T, S, Dh, keys, mask_b, mask_t, mask_k;
  float scale;
};

}  // namespace cuda
}  // namespace vispec::kernels
