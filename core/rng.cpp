#include "core/rng.h"

#include <torch/torch.h>

namespace vispec {

namespace {
constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;

inline void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = uint64_t(a) * uint64_t(b);
  hi = uint32_t(p >> 32);
  lo = uint32_t(p);
}
}  // namespace

void philox4x32(uint64_t key, uint32_t counter[4], uint32_t out[4]) {
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  uint32_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kM0, c0, hi0, lo0);
    mulhilo(kM1, c2, hi1, lo1);
    const uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += kW0;
    k1 += kW1;
  }
  out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

double uniform(const RngKey& key, uint32_t position, Purpose purpose, uint32_t draw) {
  // The counter holds the sample id and the position; the purpose and draw index are folded into the
  // fourth word so that up to 2^24 draws per (position, purpose) stay distinct.
  uint32_t counter[4] = {uint32_t(key.sample_id), uint32_t(key.sample_id >> 32), position,
                         (uint32_t(purpose) << 24) ^ (draw & 0xFFFFFFu)};
  uint32_t out[4];
  philox4x32(key.seed, counter, out);
  const uint64_t bits = (uint64_t(out[0]) << 21) ^ (uint64_t(out[1]) >> 11);  // 53 bits
  return double(bits & ((uint64_t(1) << 53) - 1)) * (1.0 / 9007199254740992.0);
}

at::Tensor uniforms(uint64_t seed, const std::vector<uint64_t>& sample_ids, uint32_t position,
                    Purpose purpose, uint32_t draw) {
  auto u = torch::empty({int64_t(sample_ids.size())}, torch::kFloat64);
  auto* p = u.data_ptr<double>();
  for (size_t i = 0; i < sample_ids.size(); ++i)
    p[i] = uniform(RngKey{seed, sample_ids[i]}, position, purpose, draw);
  return u;
}

at::Tensor uniform_table(uint64_t seed, const std::vector<uint64_t>& sample_ids, uint32_t positions,
                         Purpose purpose, uint32_t draw) {
  auto u = torch::empty({int64_t(sample_ids.size()), int64_t(positions)}, torch::kFloat64);
  auto* p = u.data_ptr<double>();
  for (size_t b = 0; b < sample_ids.size(); ++b)
    for (uint32_t i = 0; i < positions; ++i) *p++ = uniform(RngKey{seed, sample_ids[b]}, i, purpose, draw);
  return u;
}

namespace {
constexpr int64_t kLow32 = 0xFFFFFFFFll;

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

at::Tensor uniforms_at(uint64_t seed, const at::Tensor& sample_ids, const at::Tensor& positions, Purpose purpose,
                       const at::Tensor& draws) {
  if (!positions.device().is_cpu()) return philox_uniforms(seed, sample_ids, positions, purpose, draws);
  const auto pos = positions.to(torch::kInt64).contiguous();
  const auto ids = sample_ids.to(torch::kCPU, torch::kInt64).contiguous();
  const auto drw = draws.defined() ? draws.to(torch::kCPU, torch::kInt64).contiguous() : at::Tensor();
  const int64_t B = pos.size(0), C = pos.size(1);
  auto u = torch::empty({B, C}, torch::kFloat64);
  const int64_t *pp = pos.data_ptr<int64_t>(), *ip = ids.data_ptr<int64_t>();
  const int64_t* dp = drw.defined() ? drw.data_ptr<int64_t>() : nullptr;
  double* up = u.data_ptr<double>();
  for (int64_t i = 0; i < B * C; ++i)
    up[i] = uniform(RngKey{seed, uint64_t(ip[i / C])}, uint32_t(pp[i]), purpose, dp ? uint32_t(dp[i]) : 0u);
  return u;
}

}  // namespace vispec
