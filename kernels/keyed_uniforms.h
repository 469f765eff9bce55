// The keyed uniforms of core/rng.h for tensors of keys, where the decode loops draw them: on the keys'
// device, in one operator, so a loop on a GPU draws without a host round trip and, unlike the ~235 tensor
// operations of core/rng.h's philox_uniforms, in one launch.
#pragma once

#include <cstdint>

#include "core/rng.h"

namespace at {
class Tensor;
}

namespace vispec {

// sample_ids [B] (any integer dtype, any device), positions [B, C] int64, draws [B, C] int64 (or undefined:
// draw 0) -> float64 [B, C] on positions' device; element (b, c) is uniform(RngKey{seed, sample_ids[b]},
// positions[b][c], purpose, draws[b][c]) bit for bit. The vispec::keyed_uniforms operator (kernels/fused_ops.h)
// computes it on CPUs and on GPUs whose kernels passed their check; elsewhere philox_uniforms does.
at::Tensor uniforms_at(uint64_t seed, const at::Tensor& sample_ids, const at::Tensor& positions, Purpose purpose,
                       const at::Tensor& draws);

}  // namespace vispec
