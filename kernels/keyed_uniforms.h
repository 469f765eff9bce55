// The keyed uniforms of core/rng.h for tensors of keys, where the decode loops draw them: on the keys' device, in
// one operator (vispec::keyed_uniforms), so a loop on a GPU draws without a host round trip and, unlike the ~235
// tensor operations of core/rng.h's philox_uniforms, in one launch. Its CPU reference and CUDA kernel
// (kernels/keyed_uniforms.cpp, .cu) run core/philox.h's body, so they agree bit for bit.
#pragma once

#include <cstdint>
#include <optional>

#include "core/rng.h"

namespace at {
class Tensor;
}

namespace vispec {

// sample_ids [B] (any integer dtype, any device), positions [B, C] int64, draws [B, C] int64 (or undefined:
// draw 0) -> float64 [B, C] on positions' device; element (b, c) is uniform(RngKey{seed, sample_ids[b]},
// positions[b][c], purpose, draws[b][c]) bit for bit. The operator computes it on CPUs and on GPUs whose
// kernels passed their check (kernels/kernel_check.h); elsewhere philox_uniforms does.
at::Tensor uniforms_at(uint64_t seed, const at::Tensor& sample_ids, const at::Tensor& positions, Purpose purpose,
                       const at::Tensor& draws);

namespace kernels {

// The operator itself: sample_ids [B] int64, positions [B, C] int64, draws [B, C] int64 or none (draw 0), on one
// device; seed holds the uint64 seed's bits. Callers use uniforms_at.
at::Tensor keyed_uniforms(const at::Tensor& sample_ids, const at::Tensor& positions,
                          const std::optional<at::Tensor>& draws, int64_t seed, int64_t purpose);

}  // namespace kernels
}  // namespace vispec
