// e^x in float32 for the fused operators, the same bits on the host and on a CUDA device.
//
// Why not std::exp and CUDA's expf: they are different functions (the last bit differs now and then), and
// std::exp is a library call that stops the host loops around it from vectorizing. This one is branch-free
// arithmetic (Cody-Waite range reduction and a degree-6 polynomial, Cephes' expf), so a loop of silu_mul
// vectorizes on the host, and the CPU reference and the CUDA kernel agree bit for bit. Relative error within
// 2 ulp of e^x over the finite range (tests/test_fused_ops.cpp sweeps it); e^x below the smallest normal
// float (x < -87.34) is 0, above the largest float inf, and NaN stays NaN.
#pragma once

#include "core/host_device.h"

namespace vispec::kernels {

VISPEC_HD float exp_f32(float x) {
  using namespace hd;
  constexpr float kLow = -87.3365447f, kHigh = 88.7228391f;  // ln of the smallest normal and the largest float
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2High = 0.693359375f, kLn2Low = -2.12194440e-4f;  // ln 2 = high + low, high exact in 9 bits
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding and subtracting it rounds to the nearest integer
  const float clamped = x > kLow ? (x < kHigh ? x : kHigh) : kLow;  // NaN becomes kLow here, NaN again below
  const float n = sub(add(mul(clamped, kLog2e), kRound), kRound);
  const float r = sub(sub(clamped, mul(n, kLn2High)), mul(n, kLn2Low));  // |r| <= ln(2) / 2
  float p = 1.9875691500e-4f;
  p = add(mul(p, r), 1.3981999507e-3f);
  p = add(mul(p, r), 8.3334519073e-3f);
  p = add(mul(p, r), 4.1665795894e-2f);
  p = add(mul(p, r), 1.6666665459e-1f);
  p = add(mul(p, r), 5.0000001201e-1f);
  const float y = add(add(mul(p, mul(r, r)), r), 1.0f);  // e^r
  // 2^n in two exact factors, 2^(n - m) and 2^m with m = 1 when n > 0: n runs from -126 to 128, and 2^128 is
  // not a float.
  const int32_t whole = static_cast<int32_t>(n), m = whole > 0 ? 1 : 0;
  const float e = mul(mul(y, float_from_bits((whole - m + 127) << 23)), float_from_bits((m + 127) << 23));
  return x != x ? x : (x < kLow ? 0.0f : (x > kHigh ? __builtin_huge_valf() : e));
}

}  // namespace vispec::kernels
