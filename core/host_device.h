// Functions that compile for the host and for CUDA devices alike, with the same arithmetic on both.
//
// A CUDA kernel and its CPU reference share such a function's body, so they compute the same bits. On a
// device, nvcc contracts a product and a sum into one fused multiply-add unless told not to; the host build
// (kernels/ and core/ are compiled with -ffp-contract=off) does not. So every product, sum and quotient in a
// shared body goes through mul/add/sub/div below, which are the round-to-nearest intrinsics on the device
// and the plain operators on the host: one rounding each, on both sides.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define VISPEC_HD __host__ __device__ __forceinline__
#else
#define VISPEC_HD inline
#endif

namespace vispec::hd {

VISPEC_HD float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
VISPEC_HD float add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
VISPEC_HD float sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
VISPEC_HD float div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

// The same four in double precision (the tree walk's probabilities, kernels/tree_walk_body.h).
VISPEC_HD double mul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
VISPEC_HD double add(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
VISPEC_HD double sub(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
VISPEC_HD double div(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

// The bits of the double x.
VISPEC_HD uint64_t bits_of(double x) {
#if defined(__CUDA_ARCH__)
  return uint64_t(__double_as_longlong(x));
#else
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
#endif
}

// The float whose bits are `bits`.
VISPEC_HD float float_from_bits(int32_t bits) {
#if defined(__CUDA_ARCH__)
  return __int_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

}  // namespace vispec::hd
