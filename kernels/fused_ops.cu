// The CUDA kernels of the fused operators (kernels/fused_ops.h). Each computes what its CPU reference
// (kernels/fused_ops_cpu.cpp) computes, in the same float32 steps and roundings; products and differences use
// the _rn intrinsics so that nvcc does not contract them into fused multiply-adds the reference does not
// make. Only the RMSNorm's sum of squares differs (a float tree here, a double loop there), which the
// check before first use (kernels/kernel_check.cpp) bounds.
#include "kernels/fused_ops_cuda.h"
#include "core/philox.h"
#include "kernels/launch.cuh"
#include "kernels/packed.cuh"
#include "kernels/silu_gate.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
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

template <typename T>
__global__ void silu_mul_kernel(const T* __restrict__ gate_up, T* __restrict__ out, int64_t rows, int64_t F) {
  wait_for_previous();
  start_next();
  const int64_t n = rows * F;
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < n; k += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = k / F, i = k % F;
    out[k] = silu_gate<T>(to_float(gate_up[r * 2 * F + i]), to_float(gate_up[r * 2 * F + F + i]));
  }
}

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

// --- sample_next: one block per row; every threshold found by bisection over the row, so no sort -------------

constexpr int kSampleThreads = 256;

// Orders floats as unsigned integers: a < b exactly when key(a) < key(b) (no NaN reaches here).
__device__ __forceinline__ unsigned key_of(float x) {
  const unsigned bits = __float_as_uint(x);
  return bits & 0x80000000u ? ~bits : bits | 0x80000000u;
}

// Block-wide sums and maxima over kSampleThreads threads (every thread gets the result).
template <typename T, typename Op>
__device__ T block_reduce(T value, Op op, T* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  __syncthreads();
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = value;
  __syncthreads();
  T all = scratch[0];
  for (int w = 1; w < kSampleThreads / 32; ++w) all = op(all, scratch[w]);
  __syncthreads();
  return all;
}

struct Sum {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

__global__ void sample_next_kernel(const float* __restrict__ logits, const double* __restrict__ u,
                                   int64_t* __restrict__ tokens, bool* __restrict__ nonfinite, int64_t V,
                                   float temperature, int64_t top_k, float bottom) {
  __shared__ float fscratch[kSampleThreads / 32];
  __shared__ unsigned long long uscratch[kSampleThreads / 32];
  __shared__ double prefix[kSampleThreads + 1];
  __shared__ long long found;
  wait_for_previous();
  start_next();
  const int64_t row = blockIdx.x;
  const float* l = logits + row * V;
  // Non-finite logits, and the argmax (the first index of the largest value; a NaN counts as the largest).
  int bad = 0;
  unsigned long long best = 0;  // (key << 32) | (~index): the max is the largest key, then the lowest index
  for (int64_t i = threadIdx.x; i < V; i += kSampleThreads) {
    const float x = l[i];
    bad |= !isfinite(x);
    const unsigned k = isnan(x) ? 0xFFFFFFFFu : key_of(x);
    const unsigned long long c = (static_cast<unsigned long long>(k) << 32) | (0xFFFFFFFFu - unsigned(i));
    best = c > best ? c : best;
  }
  bad = __syncthreads_or(bad);
  if (bad && threadIdx.x == 0) *nonfinite = true;
  if (temperature <= 0.f) {
    best = block_reduce(
        best, [](unsigned long long a, unsigned long long b) { return a > b ? a : b; }, uscratch);
    if (threadIdx.x == 0) tokens[row] = int64_t(0xFFFFFFFFu - unsigned(best & 0xFFFFFFFFu));
    return;
  }
  const float dropped = -INFINITY;
  auto value = [&](int64_t i) { return __fdiv_rn(l[i], temperature); };
  // top-k: the k-th largest key, bit by bit from the top: the largest key with at least k values at or above it.
  unsigned kth = 0;
  if (top_k > 0 && top_k < V) {
    for (int bit = 31; bit >= 0; --bit) {
      const unsigned candidate = kth | (1u << bit);
      long long count = 0;
      for (int64_t i = threadIdx.x; i < V; i += kSampleThreads) count += key_of(value(i)) >= candidate;
      if (block_reduce(count, Sum{}, reinterpret_cast<long long*>(uscratch)) >= top_k) kth = candidate;
    }
  }
  auto kept = [&](int64_t i) { return key_of(value(i)) >= kth; };
  float top = dropped;
  for (int64_t i = threadIdx.x; i < V; i += kSampleThreads)
    if (kept(i)) top = fmaxf(top, value(i));
  top = block_reduce(top, Max{}, fscratch);
  // top-p: the smallest key x whose mass at or below it exceeds 1 - p; every value below x is dropped.
  unsigned floor_key = kth;
  if (bottom > 0.f) {
    float mass = 0.f;
    for (int64_t i = threadIdx.x; i < V; i += kSampleThreads)
      if (kept(i)) mass += expf(value(i) - top);
    mass = block_reduce(mass, Sum{}, fscratch);
    unsigned lo = kth, hi = key_of(top);
    while (lo < hi) {
      const unsigned mid = lo + (hi - lo) / 2;
      float below = 0.f;
      for (int64_t i = threadIdx.x; i < V; i += kSampleThreads) {
        const unsigned k = key_of(value(i));
        if (k >= kth && k <= mid) below += expf(value(i) - top);
      }
      if (__fdiv_rn(block_reduce(below, Sum{}, fscratch), mass) > bottom) hi = mid;
      else lo = mid + 1;
    }
    floor_key = lo;
  }
  auto in_play = [&](int64_t i) { return key_of(value(i)) >= floor_key; };
  float mass = 0.f;
  for (int64_t i = threadIdx.x; i < V; i += kSampleThreads)
    if (in_play(i)) mass += expf(value(i) - top);
  mass = block_reduce(mass, Sum{}, fscratch);
  // The draw: each thread sums its contiguous chunk of probabilities in float64, thread 0 scans the chunks, and
  // the thread whose chunk holds u * total walks it.
  const int64_t chunk = (V + kSampleThreads - 1) / kSampleThreads;
  const int64_t begin = threadIdx.x * chunk, end = begin + chunk < V ? begin + chunk : V;
  auto prob = [&](int64_t i) { return in_play(i) ? __fdiv_rn(expf(value(i) - top), mass) : 0.f; };
  double own = 0;
  for (int64_t i = begin; i < end; ++i) own += double(prob(i));
  prefix[threadIdx.x + 1] = own;
  if (threadIdx.x == 0) found = V - 1;
  __syncthreads();
  if (threadIdx.x == 0) {
    prefix[0] = 0;
    for (int t = 1; t <= kSampleThreads; ++t) prefix[t] += prefix[t - 1];
  }
  __syncthreads();
  const double target = u[row] * prefix[kSampleThreads];
  if (prefix[threadIdx.x] <= target && target < prefix[threadIdx.x + 1]) {
    double cdf = prefix[threadIdx.x];
    for (int64_t i = begin; i < end; ++i)
      if ((cdf += double(prob(i))) > target) {
        atomicMin(reinterpret_cast<unsigned long long*>(&found), static_cast<unsigned long long>(i));
        break;
      }
  }
  __syncthreads();
  if (threadIdx.x == 0) tokens[row] = found;
}

template <typename T>
__global__ void cfg_mix_kernel(const T* __restrict__ logits, float* __restrict__ out, int64_t n, float scale) {
  wait_for_previous();
  start_next();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float c = to_float(logits[i]), u = to_float(logits[n + i]);
    out[i] = __fadd_rn(u, __fmul_rn(__fsub_rn(c, u), scale));
  }
}

// Every thread tests its values; a block with any non-finite one sets the flag (threads of other blocks may set it
// too: they all write true).
template <typename T>
__global__ void note_nonfinite_kernel(const T* __restrict__ x, int64_t n, bool* __restrict__ flag) {
  wait_for_previous();
  start_next();
  bool bad = false;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    bad |= !isfinite(to_float(x[i]));
  if (__syncthreads_or(bad) && threadIdx.x == 0) *flag = true;
}

__global__ void keyed_uniforms_kernel(const int64_t* __restrict__ ids, const int64_t* __restrict__ positions,
                                      const int64_t* __restrict__ draws, double* __restrict__ u, int64_t B, int64_t C,
                                      uint64_t seed, uint32_t purpose) {
  wait_for_previous();
  start_next();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < B * C; i += int64_t(gridDim.x) * blockDim.x)
    u[i] = philox::keyed_uniform(seed, uint64_t(ids[i / C]), uint32_t(positions[i]), purpose,
                                 draws ? uint32_t(draws[i]) : 0u);
}

int blocks_for(int64_t n, int threads) {
  const int64_t b = (n + threads - 1) / threads;
  return int(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

// launch_as(T{}) for the dtype's T; its result is the launch's error.
template <typename F>
int by_dtype(Dtype dtype, F&& launch_as) {
  switch (dtype) {
    case Dtype::f32: return launch_as(float{});
    case Dtype::bf16: return launch_as(__nv_bfloat16{});
    case Dtype::f16: return launch_as(__half{});
  }
  return int(cudaErrorInvalidValue);
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

int silu_mul(Dtype dtype, const void* gate_up, void* out, int64_t rows, int64_t F, CUstream_st* stream) {
  if (rows * F == 0) return 0;
  return by_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    return launch_kernel(silu_mul_kernel<T>, blocks_for(rows * F, 256), 256, stream, static_cast<const T*>(gate_up),
                         static_cast<T*>(out), rows, F);
  });
}

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

int sample_next(const float* logits, const double* u, int64_t* tokens, bool* nonfinite, int64_t B, int64_t V,
                double temperature, int64_t top_k, double top_p, CUstream_st* stream) {
  if (B == 0) return 0;
  const float t = temperature <= 0 ? 0.f : float(temperature > 1e-5 ? temperature : 1e-5);
  return launch_kernel(sample_next_kernel, unsigned(B), kSampleThreads, stream, logits, u, tokens, nonfinite, V, t,
                       top_k, top_p < 1.0 ? float(1.0 - top_p) : 0.f);
}

int cfg_mix(Dtype dtype, const void* logits, float* out, int64_t n, float scale, CUstream_st* stream) {
  if (n == 0) return 0;
  return by_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    return launch_kernel(cfg_mix_kernel<T>, blocks_for(n, 256), 256, stream, static_cast<const T*>(logits), out, n,
                         scale);
  });
}

int note_nonfinite(Dtype dtype, const void* x, int64_t n, bool* flag, CUstream_st* stream) {
  if (n == 0) return 0;
  return by_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    return launch_kernel(note_nonfinite_kernel<T>, blocks_for(n, 256), 256, stream, static_cast<const T*>(x), n, flag);
  });
}

int keyed_uniforms(const int64_t* ids, const int64_t* positions, const int64_t* draws, double* u, int64_t B, int64_t C,
                   uint64_t seed, uint32_t purpose, CUstream_st* stream) {
  if (B * C == 0) return 0;
  return launch_kernel(keyed_uniforms_kernel, blocks_for(B * C, 256), 256, stream, ids, positions, draws, u, B, C, seed,
                       purpose);
}

const char* error_string(int error) { return cudaGetErrorString(cudaError_t(error)); }

bool overlapped_launches() {
  static const bool allowed = [] {
    const char* v = std::getenv("VISPEC_PDL");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  constexpr int kDevices = 64;
  static std::atomic<int> known[kDevices] = {};  // per device: 0 not asked yet, 1 no, 2 yes
  int device = 0;
  if (!allowed || cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kDevices) return false;
  int k = known[device].load(std::memory_order_relaxed);
  if (k == 0) {
    int major = 0;
    k = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess && major >= 9 ? 2 : 1;
    known[device].store(k, std::memory_order_relaxed);
  }
  return k == 2;
}

}  // namespace vispec::kernels::cuda
