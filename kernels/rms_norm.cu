// vispec::rms_norm's and vispec::add_rms_norm's CUDA kernels (kernels/rms_norm.h): the CPU reference's float32
// steps and roundings (kernels/rms_norm.cpp), products and sums with the _rn intrinsics so that nvcc contracts
// nothing into a fused multiply-add the reference does not make. Only the sum of squares differs (a float tree
// here, a double loop there), which the kernel check bounds before first use.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/launch.cuh"
#include "kernels/packed.cuh"
#include <type_traits>

namespace vispec::kernels::cuda {

namespace {

constexpr int kNormThreads = 256;

// One block per row: the row's sum of squares by warp shuffles, then the normalised row.
template <typename T>
__global__ void rms_norm_kernel(const T* __restrict__ x, const T* __restrict__ delta, const T* __restrict__ weight,
                                T* __restrict__ sum_out, T* __restrict__ out, int64_t D, float eps) {
  const int64_t row = blockIdx.x;
  const T* xr = x + row * D;
  const T* dr = delta ? delta + row * D : nullptr;
  wait_for_previous();
  start_next();
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

// A warp per row where the row is whole 16-byte vectors, at most 8 per lane (D <= 2048 in bf16, 1024 in fp32):
// the row stays in registers between its sum of squares and its output (one read of x and delta, no block
// barrier; the weight's loads beside x's). The same float32 steps. On a GPT-XL step's two rows a call takes
// 3.1 us on an H200 (3.2 to 4.3 for the kernel above; bench/results/gpu/): it still waits on memory twice,
// which only fusing the norm into the next product's prologue would hide.
constexpr int kNormWarpThreads = 128;

template <typename T, int VPL>
__global__ void __launch_bounds__(kNormWarpThreads)
    rms_norm_warp_kernel(const T* __restrict__ x, const T* __restrict__ delta, const T* __restrict__ weight,
                         T* __restrict__ sum_out, T* __restrict__ out, int64_t rows, int64_t D, float eps) {
  constexpr int P = Pack<T>::n;
  const int64_t row = int64_t(blockIdx.x) * (kNormWarpThreads / 32) + threadIdx.x / 32;
  if (row >= rows) return;
  const int lane = threadIdx.x % 32;
  const int64_t vectors = D / P;
  const uint4* xr = reinterpret_cast<const uint4*>(x + row * D);
  const uint4* dr = delta ? reinterpret_cast<const uint4*>(delta + row * D) : nullptr;
  float v[VPL][P];
  uint4 wv[VPL];  // the weight's vectors, loaded before x's (a weight is constant: before the wait)
#pragma unroll
  for (int s = 0; s < VPL; ++s)
    if (lane + 32 * s < vectors) wv[s] = reinterpret_cast<const uint4*>(weight)[lane + 32 * s];
  wait_for_previous();
  start_next();
  float squares = 0.f;
#pragma unroll
  for (int s = 0; s < VPL; ++s) {
    const int64_t k = lane + 32 * s;
    if (k >= vectors) break;
    unpack(xr[k], v[s], x);
    if (dr) {
      float d[P];
      unpack(dr[k], d, x);
#pragma unroll
      for (int i = 0; i < P; ++i) v[s][i] = rounded<T>(__fadd_rn(v[s][i], d[i]));
    }
#pragma unroll
    for (int i = 0; i < P; ++i) squares = __fadd_rn(squares, __fmul_rn(v[s][i], v[s][i]));
  }
  for (int offset = 16; offset > 0; offset /= 2) squares += __shfl_xor_sync(0xffffffffu, squares, offset);
  const float inverse = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(__fdiv_rn(squares, float(D)), eps)));
#pragma unroll
  for (int s = 0; s < VPL; ++s) {
    const int64_t k = lane + 32 * s;
    if (k >= vectors) break;
    float w[P];
    unpack(wv[s], w, x);
    alignas(16) T normed[P];
    alignas(16) T summed[P];
#pragma unroll
    for (int i = 0; i < P; ++i) {
      summed[i] = from_float<T>(v[s][i]);
      normed[i] = from_float<T>(__fmul_rn(rounded<T>(__fmul_rn(v[s][i], inverse)), w[i]));
    }
    reinterpret_cast<uint4*>(out + row * D)[k] = *reinterpret_cast<const uint4*>(normed);
    if (dr) reinterpret_cast<uint4*>(sum_out + row * D)[k] = *reinterpret_cast<const uint4*>(summed);
  }
}

}  // namespace

int rms_norm(Dtype dtype, const void* x, const void* delta, const void* weight, void* sum_out, void* out, int64_t rows,
             int64_t D, float eps, CUstream_st* stream) {
  if (rows == 0) return 0;
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const bool vectors_fit =
      aligned(x) && aligned(weight) && aligned(out) && (!delta || (aligned(delta) && aligned(sum_out)));
  return by_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    constexpr int P = Pack<T>::n;
    const int64_t per_lane = D % (32 * P) == 0 ? D / (32 * P) : 0;
    const unsigned warp_blocks = unsigned((rows + kNormWarpThreads / 32 - 1) / (kNormWarpThreads / 32));
    const auto warp_kernel = [&](auto vpl) {
      return launch_kernel(rms_norm_warp_kernel<T, decltype(vpl)::value>, warp_blocks, kNormWarpThreads, stream,
                           static_cast<const T*>(x), static_cast<const T*>(delta), static_cast<const T*>(weight),
                           static_cast<T*>(sum_out), static_cast<T*>(out), rows, D, eps);
    };
    if (vectors_fit && per_lane >= 1 && per_lane <= 8) {
      if (per_lane <= 2) return warp_kernel(std::integral_constant<int, 2>());
      if (per_lane <= 4) return warp_kernel(std::integral_constant<int, 4>());
      return warp_kernel(std::integral_constant<int, 8>());
    }
    return launch_kernel(rms_norm_kernel<T>, unsigned(rows), kNormThreads, stream, static_cast<const T*>(x),
                         static_cast<const T*>(delta), static_cast<const T*>(weight), static_cast<T*>(sum_out),
                         static_cast<T*>(out), D, eps);
  });
}

}  // namespace vispec::kernels::cuda
