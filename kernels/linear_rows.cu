// linear's CUDA kernel for a few rows (kernels/fused_ops.h): y [M, N] = x [M, K] W^T, W [N, K], M <= 16. A
// decode step multiplies 2 to 16 rows by each weight matrix; cuBLAS's kernels for such shapes read the weights
// at under half the memory bandwidth (an H200 profile of a GPT-XL step: 880 us of matrix products per token
// where reading the weights once takes 365 us), and the product is bound by that read alone.
//
// Each warp computes kCols output columns for all M rows: its lanes stream the columns' weight rows in
// 16-byte vectors (lane l takes vectors l, l + 32, ...; two vectors per lane per pass, so that four weight
// loads per lane are in flight), multiply them with the same vectors of every x row (read through the
// read-only cache: every warp reads the same x), and the warp sums its lanes' partial products by shuffles.
// Float32 accumulation; the result rounds once to T. The sum order differs from cuBLAS's and the CPU's, so
// the last bits of bf16 outputs do (kernels/kernel_check.cpp bounds it before first use).
#include "kernels/fused_ops_cuda.h"
#include "kernels/packed.cuh"

namespace vispec::kernels::cuda {

namespace {

constexpr int kCols = 2;      // output columns per warp
constexpr int kThreads = 256;  // 8 warps per block
constexpr int kStride = 2;     // 16-byte vectors per lane per pass

template <typename T, int MAXM>
__global__ void __launch_bounds__(kThreads) linear_rows_kernel(const T* __restrict__ x, const T* __restrict__ w,
                                                               T* __restrict__ y, int M, int64_t N, int64_t K) {
  constexpr int P = Pack<T>::n;
  const int lane = threadIdx.x % 32;
  const int64_t n0 = (int64_t(blockIdx.x) * (kThreads / 32) + threadIdx.x / 32) * kCols;
  if (n0 >= N) return;
  const int64_t vectors = K / P;
  float acc[kCols][MAXM];
#pragma unroll
  for (int c = 0; c < kCols; ++c)
#pragma unroll
    for (int m = 0; m < MAXM; ++m) acc[c][m] = 0.f;
  for (int64_t base = lane; base < vectors; base += 32 * kStride) {
    uint4 wv[kStride][kCols];
#pragma unroll
    for (int s = 0; s < kStride; ++s)
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        const int64_t v = base + 32 * s, n = n0 + c;
        wv[s][c] = v < vectors && n < N ? __ldcs(reinterpret_cast<const uint4*>(w + n * K) + v) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
    for (int s = 0; s < kStride; ++s) {
      const int64_t v = base + 32 * s;
      if (v >= vectors) break;
      float wf[kCols][P];
#pragma unroll
      for (int c = 0; c < kCols; ++c) unpack(wv[s][c], wf[c], w);
#pragma unroll
      for (int m = 0; m < MAXM; ++m) {
        if (m >= M) break;
        float xf[P];
        unpack(__ldg(reinterpret_cast<const uint4*>(x + m * K) + v), xf, x);
#pragma unroll
        for (int c = 0; c < kCols; ++c)
#pragma unroll
          for (int i = 0; i < P; ++i) acc[c][m] = fmaf(xf[i], wf[c][i], acc[c][m]);
      }
    }
  }
#pragma unroll
  for (int c = 0; c < kCols; ++c)
#pragma unroll
    for (int m = 0; m < MAXM; ++m)
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2) acc[c][m] += __shfl_xor_sync(0xffffffffu, acc[c][m], offset);
  if (lane != 0) return;
#pragma unroll
  for (int m = 0; m < MAXM; ++m) {
    if (m >= M) break;
#pragma unroll
    for (int c = 0; c < kCols; ++c)
      if (n0 + c < N) y[m * N + n0 + c] = store_float<T>(acc[c][m]);
  }
}

template <typename T, int MAXM>
int launch(const void* x, const void* w, void* y, int64_t M, int64_t N, int64_t K, CUstream_st* stream) {
  const int64_t columns_per_block = (kThreads / 32) * kCols;
  const int64_t blocks = (N + columns_per_block - 1) / columns_per_block;
  linear_rows_kernel<T, MAXM><<<dim3(unsigned(blocks)), dim3(kThreads), 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(w), static_cast<T*>(y), int(M), N, K);
  return int(cudaGetLastError());
}

template <typename T>
int launch_rows(const void* x, const void* w, void* y, int64_t M, int64_t N, int64_t K, CUstream_st* stream) {
  if (M <= 2) return launch<T, 2>(x, w, y, M, N, K, stream);
  if (M <= 4) return launch<T, 4>(x, w, y, M, N, K, stream);
  if (M <= 8) return launch<T, 8>(x, w, y, M, N, K, stream);
  return launch<T, 16>(x, w, y, M, N, K, stream);
}

}  // namespace

bool linear_rows_supports(int64_t M, int64_t K, int element_size) {
  return M >= 1 && M <= kLinearRowsMax && element_size > 0 && K % (16 / element_size) == 0;
}

int linear_rows(Dtype dtype, const void* x, const void* w, void* y, int64_t M, int64_t N, int64_t K,
                CUstream_st* stream) {
  if (M == 0 || N == 0) return 0;
  if (N > (int64_t(1) << 36)) return int(cudaErrorInvalidValue);
  switch (dtype) {
    case Dtype::f32: return launch_rows<float>(x, w, y, M, N, K, stream);
    case Dtype::bf16: return launch_rows<__nv_bfloat16>(x, w, y, M, N, K, stream);
    case Dtype::f16: return launch_rows<__half>(x, w, y, M, N, K, stream);
  }
  return int(cudaErrorInvalidValue);
}

}  // namespace vispec::kernels::cuda
