#include "core/rng.h"

#include <torch/torch.h>

#include "core/philox.h"

namespace vispec {

void philox4x32(uint64_t key, uint32_t counter[4], uint32_t out[4]) {
  for (int i = 0; i < 4; ++i) out[i] = counter[i];
  philox::rounds(key, out);
}

double uniform(const RngKey& key, uint32_t position, Purpose purpose, uint32_t draw) {
  return philox::keyed_uniform(key.seed, key.sample_id, position, uint32_t(purpose), draw);
}

at::Tensor uniforms(uint64_t seed, const std::vector<uint64_t>& sample_ids, uint32_t position, Purpose purpose,
                    uint32_t draw) {
  auto u = torch::empty({int64_t(sample_ids.size())}, torch::kFloat64);
  auto* p = u.data_ptr<double>();
  for (size_t i = 0; i < sample_ids.size(); ++i) p[i] = uniform(RngKey{seed, sample_ids[i]}, position, purpose, draw);
  return u;
}

at::Tensor uniform_table(uint64_t seed, const std::vector<uint64_t>& sample_ids, uint32_t positions, Purpose purpose,
                         uint32_t draw) {
  auto u = torch::empty({int64_t(sample_ids.size()), int64_t(positions)}, torch::kFloat64);
  auto* p = u.data_ptr<double>();
  for (size_t b = 0; b < sample_ids.size(); ++b)
    for (uint32_t i = 0; i < positions; ++i) *p++ = uniform(RngKey{seed, sample_ids[b]}, i, purpose, draw);
  return u;
}

namespace {
constexpr int64_t kLow32 = 0xFFFFFFFFll;
using philox::kM0, philox::kM1, philox::kW0, philox::kW1;

// hi and lo words of m * c for a 32-bit constant m and a tensor c of 32-bit words: m is split into 16-bit
// halves so every product stays below 2^48.
std::pair<at::Tensor, at::Tensor> mulhilo_tensor(uint32_t m, const at::Tensor& c) {
  const auto p1 = c * int64_t(m >> 16), p0 = c * int64_t(m & 0xFFFFu);  // m c = p1 2^16 + p0
  auto hi = (p1 + p0.bitwise_right_shift(16)).bitwise_right_shift(16);
  auto lo = (p1.bitwise_and(0xFFFF).bitwise_left_shift(16) + p0).bitwise_and(kLow32);
  return {hi, lo};
}
}  // namespace

at::Tensor philox_uniforms(uint64_t seed, const at::Tensor& sample_ids, const at::Tensor& positions, Purpose purpose,
                           const at::Tensor& draws) {
  const auto ids = sample_ids.to(positions.device(), torch::kInt64).view({-1, 1}).expand_as(positions);
  at::Tensor c0 = ids.bitwise_and(kLow32), c1 = ids.bitwise_right_shift(32).bitwise_and(kLow32);
  at::Tensor c2 = positions.to(torch::kInt64).bitwise_and(kLow32);
  at::Tensor c3 = torch::full_like(c2, int64_t(uint32_t(purpose) << 24));
  if (draws.defined()) c3 = c3.bitwise_xor(draws.to(c2.device(), torch::kInt64).bitwise_and(0xFFFFFF));
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    auto [hi0, lo0] = mulhilo_tensor(kM0, c0);
    auto [hi1, lo1] = mulhilo_tensor(kM1, c2);
    c0 = hi1.bitwise_xor(c1).bitwise_xor(int64_t(k0));
    c1 = lo1;
    c2 = hi0.bitwise_xor(c3).bitwise_xor(int64_t(k1));
    c3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  const auto bits = c0.bitwise_left_shift(21).bitwise_xor(c1.bitwise_right_shift(11));  // < 2^53, as uniform()
  return bits.to(torch::kFloat64) * (1.0 / 9007199254740992.0);
}

}  // namespace vispec
