// The CUDA kernels of kernels/fused_ops.h (kernels/fused_ops.cu), behind launchers that know nothing of
// LibTorch: raw pointers to contiguous memory, the dtype as a code, the stream to launch on. Each returns
// the launch's cudaError_t as an int (0: launched). kernels/fused_ops_cuda.cpp checks shapes and calls them.
#pragma once

#include <cstdint>

#include "kernels/draws_body.h"
#include "kernels/tree_growth_body.h"
#include "kernels/tree_layout_body.h"
#include "kernels/tree_walk_body.h"

struct CUstream_st;

namespace vispec::kernels::cuda {

enum class Dtype : int { f32 = 0, bf16 = 1, f16 = 2 };

// rows x D: sum_out = x + delta where delta is given (else nullptr and sum_out unused), out = rms_norm.
int rms_norm(Dtype dtype, const void* x, const void* delta, const void* weight, void* sum_out, void* out, int64_t rows,
             int64_t D, float eps, CUstream_st* stream);
// rows x 2F -> rows x F.
int silu_mul(Dtype dtype, const void* gate_up, void* out, int64_t rows, int64_t F, CUstream_st* stream);
// qkv [B, T, (H + 2 Hkv) Dh], rope [B, T, Dh/2, 2] float, slots [B, T], caches [B, Hkv, S, Dh], q [B, H, T, Dh].
int rope_write_kv(Dtype dtype, const void* qkv, const float* rope, const int64_t* slots, void* k_cache, void* v_cache,
                  void* q, int64_t B, int64_t T, int64_t H, int64_t Hkv, int64_t Dh, int64_t S, bool half_split,
                  CUstream_st* stream);

// logits [B, V] float, u [B] double -> tokens [B]; *nonfinite (a device bool) set where a logit is not finite.
int sample_next(const float* logits, const double* u, int64_t* tokens, bool* nonfinite, int64_t B, int64_t V,
                double temperature, int64_t top_k, double top_p, CUstream_st* stream);

// logits [2, n] (cond, uncond) in dtype -> out [n] float: uncond + scale (cond - uncond).
int cfg_mix(Dtype dtype, const void* logits, float* out, int64_t n, float scale, CUstream_st* stream);

// x [n] in dtype: *flag (a device bool) set where a value is NaN or infinite, left as it is otherwise.
int note_nonfinite(Dtype dtype, const void* x, int64_t n, bool* flag, CUstream_st* stream);

// ids [B], positions and draws (or nullptr: draw 0) [B, C] -> u [B, C], core/philox.h's keyed uniforms.
int keyed_uniforms(const int64_t* ids, const int64_t* positions, const int64_t* draws, double* u, int64_t B, int64_t C,
                   uint64_t seed, uint32_t purpose, CUstream_st* stream);

// The tree walk of kernels/tree_walk_body.h, one block of walk::kLanes threads per row (kernels/tree_walk.cu).
int tree_walk(const walk::Args<float>& args, int64_t B, CUstream_st* stream);
int tree_walk(const walk::Args<double>& args, int64_t B, CUstream_st* stream);

// The tree layout of kernels/tree_layout_body.h, one block of team::kLanes threads per row
// (kernels/tree_layout.cu).
int tree_layout(const layout::Args& args, int64_t B, CUstream_st* stream);
// One level of EAGLE-2's tree growth (kernels/tree_growth_body.h), one block of team::kLanes threads per row.
int grow_level(const growth::Args<float>& args, int64_t B, CUstream_st* stream);
int grow_level(const growth::Args<double>& args, int64_t B, CUstream_st* stream);
// EAGLE-1's draws without replacement (kernels/draws_body.h), one block of team::kLanes threads per row of q.
int draw_without_replacement(const draws::Args<float>& args, int64_t rows, CUstream_st* stream);
int draw_without_replacement(const draws::Args<double>& args, int64_t rows, CUstream_st* stream);

// attend_cache (kernels/attend_cache.cu): q [B, H, T, Dh] and the caches [B, Hkv, S, Dh] contiguous (the caches
// 16-byte aligned), over their first `keys` slots, mask (or nullptr: every key) a bool at mask + b mask_b +
// t mask_t + key mask_k (stride 0 where broadcast) -> out [B, T, H, Dh]; scale multiplies q . k.
struct AttendArgs {
  const void* q;
  const void* k_cache;
  const void* v_cache;
  const bool* mask;
  void* out;
  int64_t B, H, Hkv, T, S, Dh, keys, mask_b, mask_t, mask_k;
  float scale;
};
// The head widths the kernel is built for (others take the composite).
bool attend_supports(int64_t Dh);
int attend(Dtype dtype, const AttendArgs& args, CUstream_st* stream);

// linear for a few rows (kernels/linear_rows.cu): x [M, K], w [N, K], y [M, N], contiguous and 16-byte aligned.
constexpr int64_t kLinearRowsMax = 4;
// Whether the kernel takes M rows of width K in elements of element_size bytes (K whole 16-byte vectors).
bool linear_rows_supports(int64_t M, int64_t K, int element_size);
int linear_rows(Dtype dtype, const void* x, const void* w, void* y, int64_t M, int64_t N, int64_t K,
                CUstream_st* stream);
// linear_silu_mul for a few rows: x [M, K], w13 [2F, K] = [w1; w3], y [M, F]; the same conditions.
int linear_silu_mul_rows(Dtype dtype, const void* x, const void* w13, void* y, int64_t M, int64_t F, int64_t K,
                         CUstream_st* stream);

const char* error_string(int error);

}  // namespace vispec::kernels::cuda
