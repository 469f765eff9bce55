// Counter-based randomness (Philox4x32-10, Salmon et al. 2011).
//
// Every random number vispec draws is a pure function of
//   (job seed, sample id, position, purpose, draw index),
// never of rank, batch slot, thread or time. So a sample decoded alone, in a batch of 8, on rank 3 of 64,
// or after a resume produces the same tokens.
#pragma once

#include <cstdint>
#include <vector>

namespace at {
class Tensor;
}

namespace vispec {

// What a draw is for. Distinct purposes never share a stream. Append new values; never renumber.
enum class Purpose : uint32_t {
  kSample = 0,    // sampling the committed token at a position
  kDraft = 1,     // sampling a drafted token
  kAccept = 2,    // the uniform of an accept/reject test
  kResample = 3,  // sampling from a residual distribution after a rejection
  kInit = 4,      // random initial drafts (SJD)
  kTrain = 5,     // training-time randomness keyed by step
  kCouple = 6,    // the test that keeps a carried draft under maximal coupling (SCD), draw = the iteration
  kNoise = 7,     // a position's Gumbel noise, one per token (SCD's Gumbel coupling), draw = the token
};

struct RngKey {
  uint64_t seed = 0;
  uint64_t sample_id = 0;
};

// Four independent 32-bit words for one counter value.
void philox4x32(uint64_t key, uint32_t counter[4], uint32_t out[4]);

// A uniform in [0, 1) with 53 random bits.
double uniform(const RngKey& key, uint32_t position, Purpose purpose, uint32_t draw = 0);

// One uniform per sample, as a float64 CPU tensor [B].
at::Tensor uniforms(uint64_t seed, const std::vector<uint64_t>& sample_ids, uint32_t position, Purpose purpose,
                    uint32_t draw = 0);
// Every position's uniform at once, float64 CPU [B, positions]: uploaded in one copy before a decode loop, so
// the loop itself never waits on a host-to-device transfer. Column i equals uniforms(..., i, purpose, draw).
at::Tensor uniform_table(uint64_t seed, const std::vector<uint64_t>& sample_ids, uint32_t positions, Purpose purpose,
                         uint32_t draw = 0);

// The same numbers for tensors of keys, on their device: Philox4x32-10 in int64 tensor arithmetic (32-bit
// words, products split so nothing overflows), about 235 operations. Decode loops call kernels/keyed_uniforms.h's
// uniforms_at instead, one operator over core/philox.h's body, which falls back to this where a GPU's kernels
// are not used.
at::Tensor philox_uniforms(uint64_t seed, const at::Tensor& sample_ids, const at::Tensor& positions, Purpose purpose,
                           const at::Tensor& draws);

}  // namespace vispec
