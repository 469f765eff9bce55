// One row's RMSNorm by one warp, the arithmetic of vispec::rms_norm and add_rms_norm on CUDA wherever a row is
// whole 16-byte vectors, at most VPL per lane: the warp-per-row kernel (kernels/fused_ops.cu) runs this body,
// and the products that take the norm as their prologue (kernels/linear_rows.cu) its streamed twin below,
// so the two give the same bits. Lane l holds vectors l, l + 32, ... of the row in registers between the sum of squares (float32, lane
// sums in vector order, then a shuffle tree) and the output: x, or x + delta rounded to T, times
// rsqrt(mean + eps) rounded to T, times the weight, rounded to T.
#pragma once

#include "kernels/packed.cuh"

namespace vispec::kernels::cuda {

// The norm weight's vectors of this lane (a weight is constant: they may load before the kernel's wait).
template <typename T, int VPL>
__device__ __forceinline__ void load_norm_weight(const T* __restrict__ weight, int64_t vectors, int lane,
                                                 uint4 (&wv)[VPL]) {
#pragma unroll
  for (int s = 0; s < VPL; ++s)
    if (lane + 32 * s < vectors) wv[s] = reinterpret_cast<const uint4*>(weight)[lane + 32 * s];
}

// The row x [D] (delta [D] added first where given): each normed vector k goes to put_normed(k, vector), and
// with delta each summed one to put_sum(k, vector).
template <typename T, int VPL, class PutNormed, class PutSum>
__device__ __forceinline__ void norm_row(const T* __restrict__ x, const T* __restrict__ delta, const uint4 (&wv)[VPL],
                                         int64_t D, float eps, int lane, PutNormed put_normed, PutSum put_sum) {
  constexpr int P = Pack<T>::n;
  const int64_t vectors = D / P;
  const uint4* xr = reinterpret_cast<const uint4*>(x);
  const uint4* dr = delta ? reinterpret_cast<const uint4*>(delta) : nullptr;
  float v[VPL][P];
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
    put_normed(k, *reinterpret_cast<const uint4*>(normed));
    if (dr) put_sum(k, *reinterpret_cast<const uint4*>(summed));
  }
}

// norm_row's arithmetic without holding the row: x (and delta) read twice, the second time with the weight, so
// that a kernel using it as a prologue keeps its registers (a product's prefetched weights: holding the row
// took a GPT-XL q/k/v product from 64 to 158 registers a thread). The same sums in the same order, so the same
// bits as norm_row.
template <typename T, class PutNormed, class PutSum>
__device__ __forceinline__ void norm_row_streamed(const T* __restrict__ x, const T* __restrict__ delta,
                                                  const T* __restrict__ weight, int64_t D, float eps, int lane,
                                                  PutNormed put_normed, PutSum put_sum) {
  constexpr int P = Pack<T>::n;
  const int64_t vectors = D / P;
  const uint4* xr = reinterpret_cast<const uint4*>(x);
  const uint4* dr = delta ? reinterpret_cast<const uint4*>(delta) : nullptr;
  auto row_vector = [&](int64_t k, float (&v)[P]) {
    unpack(xr[k], v, x);
    if (dr) {
      float d[P];
      unpack(dr[k], d, x);
#pragma unroll
      for (int i = 0; i < P; ++i) v[i] = rounded<T>(__fadd_rn(v[i], d[i]));
    }
  };
  float squares = 0.f;
  for (int64_t k = lane; k < vectors; k += 32) {
    float v[P];
    row_vector(k, v);
#pragma unroll
    for (int i = 0; i < P; ++i) squares = __fadd_rn(squares, __fmul_rn(v[i], v[i]));
  }
  for (int offset = 16; offset > 0; offset /= 2) squares += __shfl_xor_sync(0xffffffffu, squares, offset);
  const float inverse = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(__fdiv_rn(squares, float(D)), eps)));
  for (int64_t k = lane; k < vectors; k += 32) {
    float v[P], w[P];
    row_vector(k, v);
    unpack(reinterpret_cast<const uint4*>(weight)[k], w, x);
    alignas(16) T normed[P];
    alignas(16) T summed[P];
#pragma unroll
    for (int i = 0; i < P; ++i) {
      summed[i] = from_float<T>(v[i]);
      normed[i] = from_float<T>(__fmul_rn(rounded<T>(__fmul_rn(v[i], inverse)), w[i]));
    }
    put_normed(k, *reinterpret_cast<const uint4*>(normed));
    if (dr) put_sum(k, *reinterpret_cast<const uint4*>(summed));
  }
}

// The vectors per lane a row of D values of T takes in the warp-per-row body: 2, 4 or 8, or 0 where it does not
// apply (D not whole warps of 16-byte vectors, or more than 8 of them per lane).
template <typename T>
inline int norm_vectors_per_lane(int64_t D) {
  constexpr int P = Pack<T>::n;
  const int64_t per_lane = D % (32 * P) == 0 ? D / (32 * P) : 0;
  if (per_lane < 1 || per_lane > 8) return 0;
  return per_lane <= 2 ? 2 : per_lane <= 4 ? 4 : 8;
}

}  // namespace vispec::kernels::cuda
