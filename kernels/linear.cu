// vispec::linear's CUDA kernel for a few rows (kernels/linear.h): y [M, N] = x [M, K] W^T, W [N, K], M <= 4. An AR
// step of one image with guidance multiplies 2 rows by each weight matrix; cuBLAS's kernels for that shape
// read the weights at under half the memory bandwidth (an H200 profile of a GPT-XL step: 880 us of matrix
// products per token where reading the weights once takes 365 us), and the product is bound by that read.
// Past 4 rows the arithmetic (on the CUDA cores, not the tensor cores) outweighs the read: 16 rows took 2.5
// times cuBLAS's time on the H200, so more rows go to cuBLAS.
//
// A warp per output column, for all M rows: its lanes stream the column's weight row in 16-byte vectors (lane
// l takes vectors l, l + 32, ..., up to kStride of them loaded at once, so that a 1280-wide row is in flight
// whole), multiply them with the same vectors of every x row (read through the read-only cache: every warp
// reads the same x), and the warp sums its lanes' partial products by shuffles.
// Float32 accumulation; the result rounds once to T. The sum order differs from cuBLAS's and the CPU's, so
// the last bits of bf16 outputs do (the kernel check of kernels/linear.cpp bounds it before first use).
//
// The weights never change during a step, so a warp loads its first kStride weight vectors before it waits for
// the kernel before it (kernels/launch.cuh): on sm_90 the weights stream while that kernel still runs.
//
// linear_silu_mul: SwiGLU's middle, silu(x w1^T) * (x w3^T), from the merged [w1; w3] in the same pass: the
// warp of column j takes weight rows j and F + j, rounds both products to T as linear writes them, and applies
// silu_mul's arithmetic (kernels/silu_gate.cuh, shared with silu_mul's kernel), so its output is that of linear
// then silu_mul bit for bit, without the [M, 2F] intermediate and the silu_mul kernel.
#include "kernels/launch.cuh"
#include "kernels/packed.cuh"
#include "kernels/silu_gate.cuh"

namespace vispec::kernels::cuda {

namespace {

constexpr int kThreads = 128;  // 4 warps per block, a warp per output column
constexpr int kStride = 8;     // 16-byte weight vectors per lane per pass, all in flight at once

// One weight row's pass: vectors base, base + 32, ... (kStride of them) of row wr, zero past the row.
__device__ __forceinline__ void load_pass(const uint4* wr, int64_t base, int64_t vectors, uint4 (&wv)[kStride]) {
#pragma unroll
  for (int s = 0; s < kStride; ++s) {
    const int64_t v = base + 32 * s;
    wv[s] = v < vectors ? __ldcs(wr + v) : make_uint4(0, 0, 0, 0);  // streamed: read once, not kept in L1
  }
}

// acc[m] += the pass's products with every x row (lane-partial sums).
template <typename T, int MAXM>
__device__ __forceinline__ void add_pass(const T* __restrict__ x, int M, int64_t K, int64_t base, int64_t vectors,
                                         const uint4 (&wv)[kStride], float (&acc)[MAXM]) {
  constexpr int P = Pack<T>::n;
#pragma unroll
  for (int s = 0; s < kStride; ++s) {
    const int64_t v = base + 32 * s;
    if (v >= vectors) break;
    float wf[P];
    unpack(wv[s], wf, x);
#pragma unroll
    for (int m = 0; m < MAXM; ++m) {
      if (m >= M) break;
      float xf[P];
      unpack(__ldg(reinterpret_cast<const uint4*>(x + m * K) + v), xf, x);
#pragma unroll
      for (int i = 0; i < P; ++i) acc[m] = fmaf(xf[i], wf[i], acc[m]);
    }
  }
}

template <int MAXM>
__device__ __forceinline__ void sum_lanes(float (&acc)[MAXM]) {
#pragma unroll
  for (int m = 0; m < MAXM; ++m)
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], offset);
}

// GATED false: y [M, N] = x w^T. GATED true: w is [w1; w3] of 2N rows and y [M, N] = silu(x w1^T) * (x w3^T).
template <typename T, int MAXM, bool GATED>
__global__ void __launch_bounds__(kThreads) linear_rows_kernel(const T* __restrict__ x, const T* __restrict__ w,
                                                               T* __restrict__ y, int M, int64_t N, int64_t K) {
  constexpr int P = Pack<T>::n;
  const int lane = threadIdx.x % 32;
  const int64_t n = int64_t(blockIdx.x) * (kThreads / 32) + threadIdx.x / 32;
  if (n >= N) return;
  const int64_t vectors = K / P;
  const uint4* wr = reinterpret_cast<const uint4*>(w + n * K);
  const uint4* ur = reinterpret_cast<const uint4*>(w + (GATED ? N + n : n) * K);  // w3's row (gated only)
  uint4 wv[kStride], uv[kStride];
  load_pass(wr, lane, vectors, wv);
  if (GATED) load_pass(ur, lane, vectors, uv);
  wait_for_previous();  // x is the kernel before's output
  start_next();
  float acc[MAXM], up[MAXM];
#pragma unroll
  for (int m = 0; m < MAXM; ++m) acc[m] = 0.f, up[m] = 0.f;
  for (int64_t base = lane; base < vectors; base += 32 * kStride) {
    if (base != lane) {
      load_pass(wr, base, vectors, wv);
      if (GATED) load_pass(ur, base, vectors, uv);
    }
    add_pass<T, MAXM>(x, M, K, base, vectors, wv, acc);
    if (GATED) add_pass<T, MAXM>(x, M, K, base, vectors, uv, up);
  }
  sum_lanes(acc);
  if (GATED) sum_lanes(up);
  if (lane != 0) return;
#pragma unroll
  for (int m = 0; m < MAXM; ++m) {
    if (m >= M) break;
    if (!GATED) {
      y[m * N + n] = from_float<T>(acc[m]);
      continue;
    }
    y[m * N + n] = silu_gate<T>(rounded<T>(acc[m]), rounded<T>(up[m]));  // the products as linear writes them
  }
}

template <typename T, int MAXM, bool GATED>
int launch_for(const void* x, const void* w, void* y, int64_t M, int64_t N, int64_t K, CUstream_st* stream) {
  const int64_t columns_per_block = kThreads / 32;
  const int64_t blocks = (N + columns_per_block - 1) / columns_per_block;
  return launch_kernel(linear_rows_kernel<T, MAXM, GATED>, dim3(unsigned(blocks)), dim3(kThreads), stream,
                       static_cast<const T*>(x), static_cast<const T*>(w), static_cast<T*>(y), int(M), N, K);
}

template <typename T, bool GATED>
int launch_rows(const void* x, const void* w, void* y, int64_t M, int64_t N, int64_t K, CUstream_st* stream) {
  if (M <= 2) return launch_for<T, 2, GATED>(x, w, y, M, N, K, stream);
  return launch_for<T, 4, GATED>(x, w, y, M, N, K, stream);
}

template <bool GATED>
int launch_by_dtype(Dtype dtype, const void* x, const void* w, void* y, int64_t M, int64_t N, int64_t K,
                    CUstream_st* stream) {
  if (M == 0 || N == 0) return 0;
  if (N > (int64_t(1) << 36)) return int(cudaErrorInvalidValue);
  switch (dtype) {
    case Dtype::f32: return launch_rows<float, GATED>(x, w, y, M, N, K, stream);
    case Dtype::bf16: return launch_rows<__nv_bfloat16, GATED>(x, w, y, M, N, K, stream);
    case Dtype::f16: return launch_rows<__half, GATED>(x, w, y, M, N, K, stream);
  }
  return int(cudaErrorInvalidValue);
}

}  // namespace

bool linear_rows_supports(int64_t M, int64_t K, int element_size) {
  constexpr int64_t kMaxRows = 4;  // past 4 rows cuBLAS's products are faster (above)
  return M >= 1 && M <= kMaxRows && element_size > 0 && K % (16 / element_size) == 0;
}

int linear_rows(Dtype dtype, const void* x, const void* w, void* y, int64_t M, int64_t N, int64_t K,
                CUstream_st* stream) {
  return launch_by_dtype<false>(dtype, x, w, y, M, N, K, stream);
}

int linear_silu_mul_rows(Dtype dtype, const void* x, const void* w13, void* y, int64_t M, int64_t F, int64_t K,
                         CUstream_st* stream) {
  return launch_by_dtype<true>(dtype, x, w13, y, M, F, K, stream);
}

}  // namespace vispec::kernels::cuda
