// The CUDA kernels of the fused operators (kernels/fused_ops.h). Each computes what its CPU reference
// (kernels/fused_ops_cpu.cpp) computes, in the same float32 steps and roundings; products and differences use
// the _rn intrinsics so that nvcc does not contract them into fused multiply-adds the reference does not
// make. Only the RMSNorm's sum of squares differs (a float tree here, a double loop there), which the
// check before first use (kernels/kernel_check.cpp) bounds.
#include "kernels/fused_ops_cuda.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace vispec::kernels::cuda {

namespace {

template <typename T> __device__ __forceinline__ float to_float(T v);
template <> __device__ __forceinline__ float to_float<float>(float v) { return v; }
template <> __device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <> __device__ __forceinline__ float to_float<__half>(__half v) { return __half2float(v); }

template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }

template <typename T> __device__ __forceinline__ float rounded(float v) { return to_float<T>(from_float<T>(v)); }

constexpr int kNormThreads = 256;

// One block per row: the row's sum of squares by warp shuffles, then the normalised row.
template <typename T>
__global__ void rms_norm_kernel(const T* __restrict__ x, const T* __restrict__ delta, const T* __restrict__ weight,
                                T* __restrict__ sum_out, T* __restrict__ out, int64_t D, float eps) {
  const int64_t row = blockIdx.x;
  const T* xr = x + row * D;
  const T* dr = delta ? delta + row * D : nullptr;
  float squares = 0.f;
  for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
    float v = to_float(xr[i]);
    if (dr) v = rounded<T>(__fadd_rn(v, to_float(dr[i])));
    squares = __fadd_rn(squares, __fmul_rn(v, v));
  }
  __shared__ float partial[kNormThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) squares += __shfl_xor_sync(0xffffffffu, squares, offset);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = squares;
  __syncthreads();
  if (threadIdx.x < 32) {
    float s = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.f;
    for (int offset = 16; offset > 0; offset /= 2) s += __shfl_xor_sync(0xffffffffu, s, offset);
    if (threadIdx.x == 0) partial[0] = s;
  }
  __syncthreads();
  const float inverse = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(__fdiv_rn(partial[0], float(D)), eps)));
  for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
    float v = to_float(xr[i]);
    if (dr) {
      v = rounded<T>(__fadd_rn(v, to_float(dr[i])));
      sum_out[row * D + i] = from_float<T>(v);
    }
    out[row * D + i] = from_float<T>(__fmul_rn(rounded<T>(__fmul_rn(v, inverse)), to_float(weight[i])));
  }
}

template <typename T>
__global__ void silu_mul_kernel(const T* __restrict__ gate_up, T* __restrict__ out, int64_t rows, int64_t F) {
  const int64_t n = rows * F;
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < n; k += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = k / F, i = k % F;
    const float a = to_float(gate_up[r * 2 * F + i]), up = to_float(gate_up[r * 2 * F + F + i]);
    const float silu = rounded<T>(__fdiv_rn(a, __fadd_rn(1.0f, expf(-a))));
    out[k] = from_float<T>(__fmul_rn(silu, up));
  }
}

// One thread per (entry, head of q, k or v, rotation pair): q and k pairs rotate, v pairs copy.
template <typename T>
__global__ void rope_write_kv_kernel(const T* __restrict__ qkv, const float* __restrict__ rope,
                                     const int64_t* __restrict__ slots, T* __restrict__ k_cache,
                                     T* __restrict__ v_cache, T* __restrict__ q, int64_t B, int64_t T_, int64_t H,
                                     int64_t Hkv, int64_t Dh, int64_t S, bool half_split) {
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

int blocks_for(int64_t n, int threads) {
  const int64_t b = (n + threads - 1) / threads;
  return int(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

template <typename F>
int by_dtype(Dtype dtype, F&& launch) {
  switch (dtype) {
    case Dtype::f32: launch(float{}); break;
    case Dtype::bf16: launch(__nv_bfloat16{}); break;
    case Dtype::f16: launch(__half{}); break;
  }
  return int(cudaGetLastError());
}

}  // namespace

int rms_norm(Dtype dtype, const void* x, const void* delta, const void* weight, void* sum_out, void* out,
             int64_t rows, int64_t D, float eps, CUstream_st* stream) {
  if (rows == 0) return 0;
  return by_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    rms_norm_kernel<T><<<unsigned(rows), kNormThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(delta), static_cast<const T*>(weight),
        static_cast<T*>(sum_out), static_cast<T*>(out), D, eps);
  });
}

int silu_mul(Dtype dtype, const void* gate_up, void* out, int64_t rows, int64_t F, CUstream_st* stream) {
  if (rows * F == 0) return 0;
  return by_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    silu_mul_kernel<T><<<blocks_for(rows * F, 256), 256, 0, stream>>>(static_cast<const T*>(gate_up),
                                                                      static_cast<T*>(out), rows, F);
  });
}

int rope_write_kv(Dtype dtype, const void* qkv, const float* rope, const int64_t* slots, void* k_cache,
                  void* v_cache, void* q, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t Dh, int64_t S,
                  bool half_split, CUstream_st* stream) {
  const int64_t n = B * T * (H + 2 * Hkv) * (Dh / 2);
  if (n == 0) return 0;
  return by_dtype(dtype, [&](auto zero) {
    using E = decltype(zero);
    rope_write_kv_kernel<E><<<blocks_for(n, 256), 256, 0, stream>>>(
        static_cast<const E*>(qkv), rope, slots, static_cast<E*>(k_cache), static_cast<E*>(v_cache),
        static_cast<E*>(q), B, T, H, Hkv, Dh, S, half_split);
  });
}

const char* error_string(int error) { return cudaGetErrorString(cudaError_t(error)); }

}  // namespace vispec::kernels::cuda
