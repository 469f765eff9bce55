// vispec::attend_cache's CUDA kernel (kernels/attend_cache.h): attention of a block's queries over a layer's key/value
// caches under a boolean mask, for decode steps, chains and trees. The composite it replaces
// (LibTorch's scaled_dot_product_attention over the bucket of keys) converts the mask to a float bias and
// runs a kernel tiled for long query blocks, one per layer; a decode step has one to a few dozen queries per
// row, so most of that tile is idle, and a masked key is still read.
//
// One block per (row, query head, query); its warps take the keys 32 at a time (a "chunk", one key per
// lane), so all of a row's keys are read at once by up to kMaxWarps warps:
//   - scores: lane j computes q . k_j in float32 (q staged in shared memory as float by each warp), times
//     1/sqrt(Dh); a key the mask refuses (or past `keys`) scores -inf. The key rows load beside q and the mask
//     (three loads in flight at once, not one after the other), and a chunk whose keys are all refused is
//     skipped without reading its values: the attention reads the keys of the length bucket (kv_cache.h) and
//     the values in use, to 32;
//   - online softmax per warp: running maximum m, sum l and output o (each lane owns Dh / 32 of its dims);
//     each chunk rescales o and l by exp(m_old - m_new), then adds p_j v_j for its 32 keys, all 32 value rows
//     loaded at once (a loop that waited for each row in turn took 11 us per GPT-XL layer on an H200);
//   - the warps' (m, l, o) merge in shared memory; the output is o / l, rounded to the cache's dtype, in the
//     [B, T, H Dh] layout the output projection reads. A query whose keys are all refused gets 0/0 = NaN,
//     as the composite gives.
// Grouped-query attention: query head h reads key/value head h / (H / Hkv).
// Arithmetic is float32 throughout; the sum order differs from the composite's, so the last bits of bf16
// outputs do (the kernel check of kernels/attend_cache.cpp bounds the difference before first use).
#include "kernels/attend_cache.h"
#include "kernels/exp_f32.h"
#include "kernels/launch.cuh"
#include "kernels/packed.cuh"

#include <cmath>

namespace vispec::kernels::cuda {

namespace {

constexpr int kMaxWarps = 16;

// PER_LANE = Dh / 32: the output dims each lane owns (lane l owns l PER_LANE and the PER_LANE - 1 after it: a
// value row is read whole, coalesced, by the warp).
template <typename T, int PER_LANE>
__global__ void attend_kernel(const T* __restrict__ q, const T* __restrict__ k_cache, const T* __restrict__ v_cache,
                              const bool* __restrict__ mask, T* __restrict__ out, int64_t H, int64_t Hkv, int64_t T_,
                              int64_t S, int64_t keys, int64_t mask_b, int64_t mask_t, int64_t mask_k, float scale) {
  constexpr int Dh = 32 * PER_LANE;
  const int64_t index = blockIdx.x, t = index % T_, h = (index / T_) % H, b = index / (T_ * H);
  const int64_t hk = h / (H / Hkv);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  __shared__ float q_s[kMaxWarps][Dh];  // each warp stages q itself: no block barrier before its keys' loads
  __shared__ float m_s[kMaxWarps], l_s[kMaxWarps];
  __shared__ float o_s[kMaxWarps][Dh];
  const T* qr = q + ((b * H + h) * T_ + t) * Dh;
  wait_for_previous();
  start_next();
  float qv[PER_LANE];
#pragma unroll
  for (int i = 0; i < PER_LANE; ++i) qv[i] = to_float(qr[lane * PER_LANE + i]);
  bool staged = false;
  const T* kb = k_cache + (b * Hkv + hk) * S * Dh;
  const T* vb = v_cache + (b * Hkv + hk) * S * Dh;
  const bool* mr = mask ? mask + b * mask_b + t * mask_t : nullptr;
  float m = -INFINITY, l = 0.f, o[PER_LANE];
#pragma unroll
  for (int i = 0; i < PER_LANE; ++i) o[i] = 0.f;
  constexpr int n = Pack<T>::n;
  for (int64_t chunk = warp * 32; chunk < keys; chunk += int64_t(warps) * 32) {
    const int64_t key = chunk + lane;
    const bool used = key < keys && (!mr || mr[key * mask_k]);
    // The key rows are loaded beside q and the mask, before the mask is known (the loads overlap; a refused
    // key's row, inside the bucket, is read and dropped); the values only for chunks with a key in use.
    uint4 kv[Dh / n];
    const T* kr = kb + (key < keys ? key : keys - 1) * Dh;
#pragma unroll
    for (int d = 0; d < Dh / n; ++d) kv[d] = reinterpret_cast<const uint4*>(kr)[d];
    if (!staged) {
#pragma unroll
      for (int i = 0; i < PER_LANE; ++i) q_s[warp][lane * PER_LANE + i] = qv[i];
      __syncwarp();
      staged = true;
    }
    if (!__any_sync(0xffffffffu, used)) continue;  // no key of this chunk is attended: its values stay unread
    float score = -INFINITY;
    if (used) {
      float dot = 0.f;
#pragma unroll
      for (int d = 0; d < Dh / n; ++d) {
        float f[n];
        unpack(kv[d], f, kr);
#pragma unroll
        for (int i = 0; i < n; ++i) dot = fmaf(q_s[warp][d * n + i], f[i], dot);
      }
      score = dot * scale;
    }
    float chunk_max = score;
    for (int offset = 16; offset > 0; offset /= 2)
      chunk_max = fmaxf(chunk_max, __shfl_xor_sync(0xffffffffu, chunk_max, offset));
    const float m_new = fmaxf(m, chunk_max);   // finite: some key of the chunk is used
    const float rescale = exp_f32(m - m_new);  // exp(-inf) = 0 for the warp's first chunk
    const float p = used ? exp_f32(score - m_new) : 0.f;
    float p_sum = p;
    for (int offset = 16; offset > 0; offset /= 2) p_sum += __shfl_xor_sync(0xffffffffu, p_sum, offset);
    l = l * rescale + p_sum;
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i) o[i] *= rescale;
    // p_j v_j for the chunk's 32 keys, unrolled and without a branch, so that every value load is in flight
    // at once (a loop that skipped refused keys waited for each load in turn). A key past `keys` reads the
    // chunk's last valid row instead, weighted 0; a refused key's p is 0 and its row (stale or never written)
    // is selected away, never multiplied, so a NaN there cannot leak in.
    const int64_t last = (keys - 1 - chunk) < 31 ? keys - 1 - chunk : 31;
    const T* vchunk = vb + chunk * Dh + lane * PER_LANE;
#pragma unroll
    for (int half = 0; half < 32; half += 16) {
      float v[16][PER_LANE];  // 16 rows' loads issued before any is used
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        const T* vr = vchunk + (half + j <= last ? half + j : last) * Dh;
#pragma unroll
        for (int i = 0; i < PER_LANE; ++i) v[j][i] = to_float(vr[i]);
      }
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        const float pj = __shfl_sync(0xffffffffu, p, half + j);
#pragma unroll
        for (int i = 0; i < PER_LANE; ++i) o[i] = pj != 0.f ? fmaf(pj, v[j][i], o[i]) : o[i];
      }
    }
    m = m_new;
  }
  if (lane == 0) m_s[warp] = m, l_s[warp] = l;
#pragma unroll
  for (int i = 0; i < PER_LANE; ++i) o_s[warp][lane * PER_LANE + i] = o[i];
  __syncthreads();
  if (warp != 0) return;
  float m_all = -INFINITY;
  for (int w = 0; w < warps; ++w) m_all = fmaxf(m_all, m_s[w]);
  float l_all = 0.f, acc[PER_LANE];
#pragma unroll
  for (int i = 0; i < PER_LANE; ++i) acc[i] = 0.f;
  for (int w = 0; w < warps; ++w) {
    if (l_s[w] == 0.f) continue;  // a warp that attended no key
    const float f = exp_f32(m_s[w] - m_all);
    l_all += l_s[w] * f;
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i) acc[i] += o_s[w][lane * PER_LANE + i] * f;
  }
  T* orow = out + ((b * T_ + t) * H + h) * Dh;  // [B, T, H, Dh]
#pragma unroll
  for (int i = 0; i < PER_LANE; ++i) orow[lane * PER_LANE + i] = from_float<T>(acc[i] / l_all);
}

template <typename T, int PER_LANE>
int launch(const AttendArgs& a, CUstream_st* stream) {
  const int64_t chunks = (a.keys + 31) / 32;
  const int warps = int(chunks < kMaxWarps ? (chunks > 0 ? chunks : 1) : kMaxWarps);
  return launch_kernel(attend_kernel<T, PER_LANE>, dim3(unsigned(a.B * a.H * a.T)), dim3(unsigned(32 * warps)), stream,
                       static_cast<const T*>(a.q), static_cast<const T*>(a.k_cache), static_cast<const T*>(a.v_cache),
                       a.mask, static_cast<T*>(a.out), a.H, a.Hkv, a.T, a.S, a.keys, a.mask_b, a.mask_t, a.mask_k,
                       a.scale);
}

template <typename T>
int launch_for(const AttendArgs& a, CUstream_st* stream) {
  switch (a.Dh) {
    case 32: return launch<T, 1>(a, stream);
    case 64: return launch<T, 2>(a, stream);
    case 96: return launch<T, 3>(a, stream);
    case 128: return launch<T, 4>(a, stream);
    default: return int(cudaErrorInvalidValue);
  }
}

}  // namespace

bool attend_supports(int64_t Dh) { return Dh == 32 || Dh == 64 || Dh == 96 || Dh == 128; }

int attend(Dtype dtype, const AttendArgs& args, CUstream_st* stream) {
  if (args.B * args.H * args.T == 0) return 0;
  if (args.H % args.Hkv != 0 || args.B * args.H * args.T > 0x7fffffff) return int(cudaErrorInvalidValue);
  switch (dtype) {
    case Dtype::f32: return launch_for<float>(args, stream);
    case Dtype::bf16: return launch_for<__nv_bfloat16>(args, stream);
    case Dtype::f16: return launch_for<__half>(args, stream);
  }
  return int(cudaErrorInvalidValue);
}

}  // namespace vispec::kernels::cuda
