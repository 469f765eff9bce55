// float32, bfloat16 and float16 values in the CUDA kernels of kernels/: one value to float32 and back, and
// 16-byte loads unpacked to float32 (what the memory-bound kernels read rows with; the caller guarantees 16-byte
// alignment).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace vispec::kernels::cuda {

// Values of T in 16 bytes.
template <typename T>
struct Pack {
  static constexpr int n = 16 / sizeof(T);
};

__device__ __forceinline__ void unpack(const uint4& u, float* f, const float*) {
  f[0] = __uint_as_float(u.x), f[1] = __uint_as_float(u.y), f[2] = __uint_as_float(u.z), f[3] = __uint_as_float(u.w);
}
__device__ __forceinline__ void unpack(const uint4& u, float* f, const __nv_bfloat16*) {
  const auto* p = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 v = __bfloat1622float2(p[i]);
    f[2 * i] = v.x, f[2 * i + 1] = v.y;
  }
}
__device__ __forceinline__ void unpack(const uint4& u, float* f, const __half*) {
  const auto* p = reinterpret_cast<const __half2*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 v = __half22float2(p[i]);
    f[2 * i] = v.x, f[2 * i + 1] = v.y;
  }
}

// One value of T to float32 and back (round to nearest even), for every kernel of kernels/.
template <typename T>
__device__ __forceinline__ float to_float(T v);
template <>
__device__ __forceinline__ float to_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <>
__device__ __forceinline__ float to_float<__half>(__half v) {
  return __half2float(v);
}

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}

// v rounded to T and back: what a value stored as T and read again holds.
template <typename T>
__device__ __forceinline__ float rounded(float v) {
  return to_float<T>(from_float<T>(v));
}

}  // namespace vispec::kernels::cuda
