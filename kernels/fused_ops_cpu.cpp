#include "kernels/fused_ops_cpu.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <numeric>
#include <type_traits>
#include <vector>

#include "core/check.h"
#include "core/philox.h"
#include "kernels/vector_loops.h"

namespace vispec::kernels::cpu {

namespace {

// Rows per task of at::parallel_for: a decode step's few rows stay on one thread (a task switch costs more
// than they do); a prefill's hundreds spread.
int64_t grain(int64_t row_width) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, row_width)); }

// One row of rms_norm: h = x (+ delta, rounded to T), out = T(T(h / rms(h)) * weight). The sum of squares
// in double: the reference is the exact one, the kernels' float sums are held to it within tolerance.
template <typename T>
void rms_row(const T* x, const T* delta, const T* weight, T* sum_out, T* out, int64_t D, float eps,
             std::vector<float>& h) {
  double squares = 0;
  for (int64_t i = 0; i < D; ++i) {
    float v = float(x[i]);
    if (delta) v = float(T(v + float(delta[i])));
    h[i] = v;
    squares += double(v) * double(v);
  }
  const float inverse = 1.0f / std::sqrt(float(squares / double(D)) + eps);
  for (int64_t i = 0; i < D; ++i) {
    if (sum_out) sum_out[i] = T(h[i]);
    out[i] = T(float(T(h[i] * inverse)) * float(weight[i]));
  }
}

template <typename T>
void rms_rows(const torch::Tensor& x, const torch::Tensor& delta, const torch::Tensor& weight,
              const torch::Tensor& sum_out, const torch::Tensor& out, float eps) {
  const int64_t D = x.size(-1), rows = x.numel() / std::max<int64_t>(1, D);
  const T* xp = x.data_ptr<T>();
  const T* dp = delta.defined() ? delta.data_ptr<T>() : nullptr;
  const T* wp = weight.data_ptr<T>();
  T* sp = sum_out.defined() ? sum_out.data_ptr<T>() : nullptr;
  T* op = out.data_ptr<T>();
  at::parallel_for(0, rows, grain(D), [&](int64_t r0, int64_t r1) {
    std::vector<float> h(static_cast<size_t>(D));
    for (int64_t r = r0; r < r1; ++r)
      rms_row<T>(xp + r * D, dp ? dp + r * D : nullptr, wp, sp ? sp + r * D : nullptr, op + r * D, D, eps, h);
  });
}

void check_norm(const torch::Tensor& x, const torch::Tensor& weight) {
  VISPEC_ASSERT(x.dim() >= 1 && weight.dim() == 1 && weight.size(0) == x.size(-1), "rms_norm of ", x.sizes(),
                " by a weight of ", weight.sizes());
  VISPEC_ASSERT(weight.scalar_type() == x.scalar_type(), "rms_norm: weight ", weight.scalar_type(), ", x ",
                x.scalar_type());
}

}  // namespace

torch::Tensor rms_norm(const torch::Tensor& x_in, const torch::Tensor& weight_in, double eps) {
  check_norm(x_in, weight_in);
  const auto x = x_in.contiguous(), weight = weight_in.contiguous();
  auto out = torch::empty_like(x);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, x.scalar_type(), "vispec::rms_norm",
                                  [&] { rms_rows<scalar_t>(x, {}, weight, {}, out, float(eps)); });
  return out;
}

std::tuple<torch::Tensor, torch::Tensor> add_rms_norm(const torch::Tensor& x_in, const torch::Tensor& delta_in,
                                                      const torch::Tensor& weight_in, double eps) {
  check_norm(x_in, weight_in);
  VISPEC_ASSERT(delta_in.sizes() == x_in.sizes() && delta_in.scalar_type() == x_in.scalar_type(), "add_rms_norm: x ",
                x_in.sizes(), ", delta ", delta_in.sizes());
  const auto x = x_in.contiguous(), delta = delta_in.contiguous(), weight = weight_in.contiguous();
  auto sum = torch::empty_like(x), out = torch::empty_like(x);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, x.scalar_type(), "vispec::add_rms_norm",
                                  [&] { rms_rows<scalar_t>(x, delta, weight, sum, out, float(eps)); });
  return {sum, out};
}

namespace {

// One row of silu_mul: out = T(T(silu(gate)) * up) over [gate | up], in float32 through the vector loops.
template <typename T>
struct SiluMulRow {
  explicit SiluMulRow(int64_t F) : F(F), gate(F), up(F), act(F) {}
  void operator()(const T* gate_up, T* out) {
    std::copy(gate_up, gate_up + F, gate.begin());
    std::copy(gate_up + F, gate_up + 2 * F, up.begin());
    silu_f32(gate.data(), act.data(), F);
    for (auto& a : act) a = float(T(a));
    multiply_f32(act.data(), up.data(), F);
    std::copy(act.begin(), act.end(), out);
  }
  int64_t F;
  std::vector<float> gate, up, act;
};
template <>
struct SiluMulRow<float> {  // no copies: the row is float32 already, and its roundings are the identity
  explicit SiluMulRow(int64_t F) : F(F) {}
  void operator()(const float* gate_up, float* out) {
    silu_f32(gate_up, out, F);
    multiply_f32(out, gate_up + F, F);
  }
  int64_t F;
};

}  // namespace

torch::Tensor silu_mul(const torch::Tensor& gate_up_in) {
  VISPEC_ASSERT(gate_up_in.dim() >= 1 && gate_up_in.size(-1) % 2 == 0, "silu_mul of ", gate_up_in.sizes());
  const auto gate_up = gate_up_in.contiguous();
  const int64_t F = gate_up.size(-1) / 2, rows = gate_up.numel() / std::max<int64_t>(1, 2 * F);
  auto sizes = gate_up.sizes().vec();
  sizes.back() = F;
  auto out = torch::empty(sizes, gate_up.options());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, gate_up.scalar_type(), "vispec::silu_mul", [&] {
    const scalar_t* in = gate_up.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    at::parallel_for(0, rows, grain(F), [&](int64_t r0, int64_t r1) {
      SiluMulRow<scalar_t> row(F);
      for (int64_t r = r0; r < r1; ++r) row(in + r * 2 * F, o + r * F);
    });
  });
  return out;
}

void check_rope_write_kv(const torch::Tensor& qkv, const torch::Tensor& rope, const torch::Tensor& k_cache,
                         const torch::Tensor& v_cache, const torch::Tensor& slots, int64_t n_head, int64_t n_kv_head) {
  VISPEC_ASSERT(qkv.dim() == 3 && k_cache.dim() == 4 && n_head > 0 && n_kv_head > 0, "rope_write_kv: qkv ", qkv.sizes(),
                ", cache ", k_cache.sizes());
  const int64_t B = qkv.size(0), T = qkv.size(1), Dh = k_cache.size(3);
  VISPEC_ASSERT(qkv.size(2) == (n_head + 2 * n_kv_head) * Dh && Dh % 2 == 0, "rope_write_kv: qkv ", qkv.sizes(),
                " for ", n_head, " + 2 x ", n_kv_head, " heads of ", Dh);
  VISPEC_ASSERT(k_cache.size(0) == B && k_cache.size(1) == n_kv_head && v_cache.sizes() == k_cache.sizes() &&
                    k_cache.is_contiguous() && v_cache.is_contiguous(),
                "rope_write_kv: caches ", k_cache.sizes(), " and ", v_cache.sizes(), " for ", B, " rows");
  VISPEC_ASSERT(k_cache.scalar_type() == qkv.scalar_type() && v_cache.scalar_type() == qkv.scalar_type(),
                "rope_write_kv: cache dtype ", k_cache.scalar_type(), ", activations ", qkv.scalar_type());
  VISPEC_ASSERT(rope.scalar_type() == torch::kFloat32 && rope.numel() == B * T * Dh, "rope_write_kv: rope ",
                rope.sizes(), " ", rope.scalar_type(), " for ", B, " x ", T, " x ", Dh);
  VISPEC_ASSERT(slots.scalar_type() == torch::kInt64 && slots.numel() == B * T, "rope_write_kv: slots ", slots.sizes(),
                " for ", B, " x ", T);
}

torch::Tensor rope_write_kv(const torch::Tensor& qkv_in, const torch::Tensor& rope_in, const torch::Tensor& k_cache,
                            const torch::Tensor& v_cache, const torch::Tensor& slots_in, int64_t n_head,
                            int64_t n_kv_head, bool half_split) {
  check_rope_write_kv(qkv_in, rope_in, k_cache, v_cache, slots_in, n_head, n_kv_head);
  const auto qkv = qkv_in.contiguous(), rope = rope_in.contiguous(), slots = slots_in.contiguous();
  const int64_t B = qkv.size(0), T = qkv.size(1), S = k_cache.size(2), Dh = k_cache.size(3), P = Dh / 2;
  const int64_t H = n_head, Hkv = n_kv_head, W = qkv.size(2);
  const int64_t* sp = slots.data_ptr<int64_t>();
  for (int64_t i = 0; i < B * T; ++i)
    VISPEC_ASSERT(sp[i] >= 0 && sp[i] < S, "rope_write_kv: slot ", sp[i], " outside the cache's ", S);
  auto q = torch::empty({B, H, T, Dh}, qkv.options());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, qkv.scalar_type(), "vispec::rope_write_kv", [&] {
    using T_ = scalar_t;
    const T_* in = qkv.data_ptr<T_>();
    const float* rp = rope.data_ptr<float>();
    T_ *qp = q.data_ptr<T_>(), *kp = k_cache.data_ptr<T_>(), *vp = v_cache.data_ptr<T_>();
    // Pair i of a head is (x[2i], x[2i+1]) for 2D RoPE, (x[i], x[i + Dh/2]) for 1D; both rotate by angle i.
    const int64_t second = half_split ? P : 1, stride = half_split ? 1 : 2;
    auto rotate = [&](const T_* x, const float* r, T_* out) {
      for (int64_t i = 0; i < P; ++i) {
        const int64_t a = i * stride, b = a + second;
        const float x0 = float(x[a]), x1 = float(x[b]), c = r[2 * i], s = r[2 * i + 1];
        out[a] = T_(x0 * c - x1 * s);
        out[b] = T_(x1 * c + x0 * s);
      }
    };
    at::parallel_for(0, B * T, grain(W), [&](int64_t e0, int64_t e1) {
      for (int64_t e = e0; e < e1; ++e) {
        const int64_t b = e / T, t = e % T, slot = sp[e];
        const T_* x = in + e * W;
        const float* r = rp + e * Dh;
        for (int64_t h = 0; h < H; ++h) rotate(x + h * Dh, r, qp + ((b * H + h) * T + t) * Dh);
        for (int64_t h = 0; h < Hkv; ++h) {
          const int64_t at = ((b * Hkv + h) * S + slot) * Dh;
          rotate(x + (H + h) * Dh, r, kp + at);
          std::copy(x + (H + Hkv + h) * Dh, x + (H + Hkv + h + 1) * Dh, vp + at);
        }
      }
    });
  });
  return q;
}

void check_sample_next(const torch::Tensor& logits, const torch::Tensor& u, const torch::Tensor& nonfinite) {
  VISPEC_ASSERT(logits.dim() == 2 && logits.scalar_type() == torch::kFloat32 && logits.size(1) > 0,
                "sample_next: logits ", logits.sizes(), " ", logits.scalar_type());
  VISPEC_ASSERT(u.dim() == 1 && u.size(0) == logits.size(0) && u.scalar_type() == torch::kFloat64,
                "sample_next: uniforms ", u.sizes(), " ", u.scalar_type(), " for ", logits.size(0), " rows");
  VISPEC_ASSERT(nonfinite.dim() == 0 && nonfinite.scalar_type() == torch::kBool, "sample_next: flag ",
                nonfinite.sizes(), " ", nonfinite.scalar_type());
}

namespace {

// One row of sample_next. The composite chain's rules (decoding/floor/sampler.cpp): top-k keeps the values at or
// above the k-th largest; top-p walks the ascending sort and drops every token whose cumulative mass from the
// bottom is at most 1 - p, the most likely always kept; the draw is the first index whose float64 CDF exceeds
// u times the total.
int64_t sample_row(const float* logits, int64_t V, double u, double temperature, int64_t top_k, double top_p,
                   bool& nonfinite) {
  nonfinite = false;
  for (int64_t i = 0; i < V; ++i) nonfinite = nonfinite || !std::isfinite(logits[i]);
  if (temperature <= 0) {  // the argmax; a NaN counts as the largest, as LibTorch's argmax has it
    int64_t best = 0;
    for (int64_t i = 1; i < V; ++i) {
      if (std::isnan(logits[best])) break;
      if (std::isnan(logits[i]) || logits[i] > logits[best]) best = i;
    }
    return best;
  }
  constexpr float kDropped = -std::numeric_limits<float>::infinity();
  const float t = float(std::max(temperature, 1e-5));
  std::vector<float> v(static_cast<size_t>(V));
  for (int64_t i = 0; i < V; ++i) v[i] = logits[i] / t;
  if (top_k > 0 && top_k < V) {
    std::vector<float> order(v);
    std::nth_element(order.begin(), order.begin() + (top_k - 1), order.end(), std::greater<float>());
    const float kth = order[top_k - 1];
    for (auto& x : v)
      if (x < kth) x = kDropped;
  }
  if (top_p < 1.0) {
    std::vector<int64_t> order(static_cast<size_t>(V));
    std::iota(order.begin(), order.end(), int64_t(0));
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return v[a] < v[b]; });
    const float top = v[order.back()];
    float mass = 0;
    for (int64_t i = 0; i < V; ++i) mass += std::exp(v[order[i]] - top);
    const float bottom = float(1.0 - top_p);
    float cumulative = 0;
    std::vector<int64_t> dropped;
    for (int64_t i = 0; i + 1 < V; ++i) {
      cumulative += std::exp(v[order[i]] - top) / mass;
      if (cumulative > bottom) break;
      dropped.push_back(order[i]);
    }
    for (auto i : dropped) v[i] = kDropped;
  }
  const float top = *std::max_element(v.begin(), v.end());
  float mass = 0;
  for (auto& x : v) mass += (x = std::exp(x - top));
  double total = 0;
  for (auto& x : v) total += double(x /= mass);
  const double target = u * total;
  double cdf = 0;
  for (int64_t i = 0; i < V; ++i)
    if ((cdf += double(v[i])) > target) return i;
  return V - 1;
}

}  // namespace

torch::Tensor sample_next(const torch::Tensor& logits_in, const torch::Tensor& u_in, double temperature, int64_t top_k,
                          double top_p, const torch::Tensor& nonfinite) {
  check_sample_next(logits_in, u_in, nonfinite);
  const auto logits = logits_in.contiguous(), u = u_in.contiguous();
  const int64_t B = logits.size(0), V = logits.size(1);
  auto tokens = torch::empty({B}, torch::kInt64);
  std::vector<char> bad(static_cast<size_t>(B), 0);
  const float* lp = logits.data_ptr<float>();
  const double* up = u.data_ptr<double>();
  int64_t* tp = tokens.data_ptr<int64_t>();
  at::parallel_for(0, B, grain(V), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      bool row_bad = false;
      tp[r] = sample_row(lp + r * V, V, up[r], temperature, top_k, top_p, row_bad);
      bad[r] = row_bad;
    }
  });
  if (std::any_of(bad.begin(), bad.end(), [](char b) { return b != 0; })) nonfinite.fill_(true);
  return tokens;
}

void check_cfg_mix(const torch::Tensor& logits) {
  VISPEC_ASSERT(logits.dim() >= 1 && logits.size(0) % 2 == 0, "cfg_mix: logits ", logits.sizes(),
                " are not [cond; uncond] rows");
}

torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight) { return at::linear(x, weight); }

torch::Tensor linear_silu_mul(const torch::Tensor& x, const torch::Tensor& weight) {
  return silu_mul(at::linear(x, weight));
}

torch::Tensor attend_cache(const torch::Tensor& q, const torch::Tensor& k_cache, const torch::Tensor& v_cache,
                           int64_t keys, const std::optional<torch::Tensor>& mask, bool causal) {
  const auto k = k_cache.narrow(2, 0, keys), v = v_cache.narrow(2, 0, keys);
  const bool grouped = k.size(1) != q.size(1);
  const auto y = at::scaled_dot_product_attention(q, k, v, mask, 0.0, causal && !mask, {}, grouped);
  return y.transpose(1, 2).reshape({q.size(0), q.size(2), q.size(1) * q.size(3)});
}

torch::Tensor cfg_mix(const torch::Tensor& logits_in, double scale) {
  check_cfg_mix(logits_in);
  const auto logits = logits_in.contiguous();
  auto sizes = logits.sizes().vec();
  sizes[0] /= 2;
  auto out = torch::empty(sizes, logits.options().dtype(torch::kFloat32));
  const int64_t n = out.numel();
  float* o = out.data_ptr<float>();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, logits.scalar_type(), "vispec::cfg_mix", [&] {
    const scalar_t* cond = logits.data_ptr<scalar_t>();
    constexpr bool is_float = std::is_same_v<scalar_t, float>;
    at::parallel_for(0, n, 16384, [&](int64_t i0, int64_t i1) {
      std::vector<float> c, u;  // another dtype's span in float32
      if (!is_float) {
        c.assign(cond + i0, cond + i1);
        u.assign(cond + n + i0, cond + n + i1);
      }
      const float* cp = is_float ? reinterpret_cast<const float*>(cond) + i0 : c.data();
      const float* up = is_float ? reinterpret_cast<const float*>(cond) + n + i0 : u.data();
      cfg_mix_f32(cp, up, float(scale), o + i0, i1 - i0);
    });
  });
  return out;
}

void check_note_nonfinite(const torch::Tensor& x, const torch::Tensor& flag) {
  VISPEC_ASSERT(flag.dim() == 0 && flag.scalar_type() == torch::kBool && flag.device() == x.device(),
                "note_nonfinite: the flag is ", flag.sizes(), " ", flag.scalar_type(), " on ", flag.device(),
                ", not a 0-dim bool on ", x.device());
}

namespace {
// Whether any of n values is NaN or infinite: its exponent bits all set (no early exit, so the loop vectorises).
template <typename Bits>
bool any_nonfinite(const Bits* v, int64_t n, Bits exponent) {
  bool bad = false;
  for (int64_t i = 0; i < n; ++i) bad |= (v[i] & exponent) == exponent;
  return bad;
}
}  // namespace

void note_nonfinite(const torch::Tensor& x_in, const torch::Tensor& flag) {
  check_note_nonfinite(x_in, flag);
  const auto x = x_in.contiguous();
  const int64_t n = x.numel();
  std::atomic<bool> bad{false};
  at::parallel_for(0, n, 1 << 16, [&](int64_t i0, int64_t i1) {
    bool found = false;
    switch (x.scalar_type()) {
      case torch::kFloat32:
        found = any_nonfinite(reinterpret_cast<const uint32_t*>(x.data_ptr()) + i0, i1 - i0, uint32_t(0x7f800000));
        break;
      case torch::kFloat64:
        found =
            any_nonfinite(reinterpret_cast<const uint64_t*>(x.data_ptr()) + i0, i1 - i0, uint64_t(0x7ff0000000000000));
        break;
      case torch::kBFloat16:
        found = any_nonfinite(reinterpret_cast<const uint16_t*>(x.data_ptr()) + i0, i1 - i0, uint16_t(0x7f80));
        break;
      case torch::kHalf:
        found = any_nonfinite(reinterpret_cast<const uint16_t*>(x.data_ptr()) + i0, i1 - i0, uint16_t(0x7c00));
        break;
      default: VISPEC_FAIL("note_nonfinite: ", x.scalar_type(), " values (a floating dtype is watched)");
    }
    if (found) bad = true;
  });
  if (bad) flag.fill_(true);
}

void check_keyed_uniforms(const torch::Tensor& sample_ids, const torch::Tensor& positions,
                          const std::optional<torch::Tensor>& draws) {
  VISPEC_ASSERT(positions.dim() == 2 && positions.scalar_type() == torch::kInt64, "keyed_uniforms: positions ",
                positions.sizes(), " ", positions.scalar_type());
  VISPEC_ASSERT(
      sample_ids.dim() == 1 && sample_ids.size(0) == positions.size(0) && sample_ids.scalar_type() == torch::kInt64,
      "keyed_uniforms: sample ids ", sample_ids.sizes(), " for positions ", positions.sizes());
  VISPEC_ASSERT(!draws || (draws->sizes() == positions.sizes() && draws->scalar_type() == torch::kInt64),
                "keyed_uniforms: draws ", draws ? draws->sizes() : positions.sizes(), " for positions ",
                positions.sizes());
}

torch::Tensor keyed_uniforms(const torch::Tensor& sample_ids_in, const torch::Tensor& positions_in,
                             const std::optional<torch::Tensor>& draws_in, int64_t seed, int64_t purpose) {
  check_keyed_uniforms(sample_ids_in, positions_in, draws_in);
  const auto ids = sample_ids_in.contiguous(), positions = positions_in.contiguous();
  const auto draws = draws_in ? draws_in->contiguous() : torch::Tensor();
  const int64_t B = positions.size(0), C = positions.size(1);
  auto u = torch::empty({B, C}, torch::kFloat64);
  const int64_t *ip = ids.data_ptr<int64_t>(), *pp = positions.data_ptr<int64_t>();
  const int64_t* dp = draws.defined() ? draws.data_ptr<int64_t>() : nullptr;
  double* up = u.data_ptr<double>();
  for (int64_t i = 0; i < B * C; ++i)
    up[i] = philox::keyed_uniform(uint64_t(seed), uint64_t(ip[i / C]), uint32_t(pp[i]), uint32_t(purpose),
                                  dp ? uint32_t(dp[i]) : 0u);
  return u;
}

}  // namespace vispec::kernels::cpu
