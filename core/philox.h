// The body of vispec's random numbers (core/rng.h), shared by the host and CUDA kernels: Philox4x32-10 and
// the keyed uniform built on it. One definition, so a uniform drawn inside a kernel has the host's bits
// (tests/test_sampler.cpp holds the tensor and kernel forms to the host loop).
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace vispec::philox {

constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;  // the round's multipliers
constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;  // the key schedule's increments

// Philox4x32-10 (Salmon et al. 2011): four 32-bit words of counter c, in place, under a 64-bit key.
VISPEC_HD void rounds(uint64_t key, uint32_t c[4]) {
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t(kM0) * c[0], p1 = uint64_t(kM1) * c[2];
    const uint32_t n0 = uint32_t(p1 >> 32) ^ c[1] ^ k0, n1 = uint32_t(p1);
    const uint32_t n2 = uint32_t(p0 >> 32) ^ c[3] ^ k1, n3 = uint32_t(p0);
    c[0] = n0, c[1] = n1, c[2] = n2, c[3] = n3;
    k0 += kW0;
    k1 += kW1;
  }
}

// The uniform in [0, 1) with 53 random bits for (seed; sample id, position, purpose, draw). The counter holds
// the sample id and the position; the purpose and draw index are folded into the fourth word so that up to
// 2^24 draws per (position, purpose) stay distinct.
VISPEC_HD double keyed_uniform(uint64_t seed, uint64_t sample_id, uint32_t position, uint32_t purpose, uint32_t draw) {
  uint32_t c[4] = {uint32_t(sample_id), uint32_t(sample_id >> 32), position, (purpose << 24) ^ (draw & 0xFFFFFFu)};
  rounds(seed, c);
  const uint64_t bits = ((uint64_t(c[0]) << 21) ^ (uint64_t(c[1]) >> 11)) & ((uint64_t(1) << 53) - 1);
  return double(bits) * (1.0 / 9007199254740992.0);
}

}  // namespace vispec::philox
