// vispec::rope_write_kv's CUDA kernel (kernels/rope_write_kv.h): the CPU reference's rotations
// (kernels/rope_write_kv.cpp) with the _rn intrinsics, so the two agree bit for bit.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/launch.cuh"
#include "kernels/packed.cuh"

namespace vispec::kernels::cuda {

namespace {

// One thread per (entry, head of q, k or v, rotation pair): q and k pairs rotate, v pairs copy.
template <typename T>
__global__ void rope_write_kv_kernel(const T* __restrict__ qkv, const float* __restrict__ rope,
                                     const int64_t* __restrict__ slots, T* __restrict__ k_cache,
                                     T* __restrict__ v_cache, T* __restrict__ q, int64_t B, int64_t T_, int64_t H,
                                     int64_t Hkv, int64_t Dh, int64_t S, bool half_split) {
  wait_for_previous();
  start_next();
  const int64_t P = Dh / 2, heads = H + 2 * Hkv, n = B * T_ * heads * P;
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < n; k += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = k % P, head = (k / P) % heads, e = k / (P * heads), b = e / T_, t = e % T_;
    const int64_t a = half_split ? i : 2 * i, second = a + (half_split ? P : 1);
    const T* x = qkv + e * heads * Dh + head * Dh;
    T* dst;
    if (head < H) {
      dst = q + ((b * H + head) * T_ + t) * Dh;
    } else {
      const int64_t slot = slots[e];
      if (slot < 0 || slot >= S) continue;  // the host checked its slots; never write outside the cache
      const int64_t h = head < H + Hkv ? head - H : head - H - Hkv;
      dst = (head < H + Hkv ? k_cache : v_cache) + ((b * Hkv + h) * S + slot) * Dh;
      if (head >= H + Hkv) {
        dst[a] = x[a];
        dst[second] = x[second];
        continue;
      }
    }
    const float x0 = to_float(x[a]), x1 = to_float(x[second]);
    const float c = rope[e * Dh + 2 * i], s = rope[e * Dh + 2 * i + 1];
    dst[a] = from_float<T>(__fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s)));
    dst[second] = from_float<T>(__fadd_rn(__fmul_rn(x1, c), __fmul_rn(x0, s)));
  }
}

}  // namespace

int rope_write_kv(Dtype dtype, const void* qkv, const float* rope, const int64_t* slots, void* k_cache, void* v_cache,
                  void* q, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t Dh, int64_t S, bool half_split,
                  CUstream_st* stream) {
  const int64_t n = B * T * (H + 2 * Hkv) * (Dh / 2);
  if (n == 0) return 0;
  return by_dtype(dtype, [&](auto zero) {
    using E = decltype(zero);
    return launch_kernel(rope_write_kv_kernel<E>, blocks_for(n, 256), 256, stream, static_cast<const E*>(qkv), rope,
                         slots, static_cast<E*>(k_cache), static_cast<E*>(v_cache), static_cast<E*>(q), B, T, H, Hkv,
                         Dh, S, half_split);
  });
}

}  // namespace vispec::kernels::cuda
