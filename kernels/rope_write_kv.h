// A cached attention's input in one operator (vispec::rope_write_kv): RoPE of q and k and the cache write, from
// one merged projection. Part of a transformer layer's fused path (models/gpt/gpt.cpp's forward_fused), which the
// layer chooses; its CPU reference is kernels/rope_write_kv.cpp, its CUDA kernel kernels/rope_write_kv.cu.
#pragma once

#include <cstdint>

namespace at {
class Tensor;
}

namespace vispec::kernels {

// qkv [B, T, (H + 2 Hkv) Dh]: rotates q and k by rope [B, T, Dh/2, 2] (cos, sin; float32), stores k and v at
// slots [B, T] (int64) of the layer's caches k_cache, v_cache [B, Hkv, S, Dh] (in their dtype) and returns q
// rotated, [B, H, T, Dh] contiguous. half_split: 1D RoPE's halves (x[i], x[i + Dh/2]) rotate together; else 2D
// RoPE's neighbours (x[2i], x[2i+1]).
at::Tensor rope_write_kv(const at::Tensor& qkv, const at::Tensor& rope, const at::Tensor& k_cache,
                         const at::Tensor& v_cache, const at::Tensor& slots, int64_t n_head, int64_t n_kv_head,
                         bool half_split);

}  // namespace vispec::kernels
