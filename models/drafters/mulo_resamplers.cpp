#include "models/drafters/mulo_resamplers.h"

namespace vispec {

namespace F = torch::nn::functional;

RowCausalConvImpl::RowCausalConvImpl(int64_t in, int64_t out, int64_t k) : kernel(k) {
  conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, k)));
}

torch::Tensor RowCausalConvImpl::forward(const torch::Tensor& x) {
  // Columns: centred, zero padding both sides. Rows: k - 1 zero rows above and none below.
  return conv(F::pad(x, F::PadFuncOptions({kernel / 2, kernel / 2, kernel - 1, 0})));
}

RowCausalResBlockImpl::RowCausalResBlockImpl(int64_t channels, int64_t kernel) {
  conv1 = register_module("conv1", RowCausalConv(channels, channels, kernel));
  conv2 = register_module("conv2", RowCausalConv(channels, channels, kernel));
}

torch::Tensor RowCausalResBlockImpl::forward(const torch::Tensor& x) {
  return x + conv2(torch::silu(conv1(torch::silu(x))));
}

MuloResamplerImpl::MuloResamplerImpl(const MuloResamplerConfig& c, int direction) : direction_(direction) {
  // U_2 works at the low resolution and ends with pixel shuffle (4 channel groups -> a 2 x 2 patch per cell:
  // high-res rows 2i, 2i + 1 come from low-res row i). D_2 starts with pixel unshuffle (a 2 x 2 patch -> one
  // cell of 4 channel groups: low-res row i gathers high-res rows 2i, 2i + 1) and works at the low resolution.
  const int64_t in = up() ? c.embed_dim : 4 * c.embed_dim, out = up() ? 4 * c.embed_dim : c.embed_dim;
  conv_in = register_module("conv_in", RowCausalConv(in, c.width, c.kernel));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.blocks; ++i) blocks->push_back(RowCausalResBlock(c.width, c.kernel));
  conv_out = register_module("conv_out", RowCausalConv(c.width, out, c.kernel));
}

torch::Tensor MuloResamplerImpl::forward(const torch::Tensor& codes) {
  // Code vectors come from the float32 VQ; the nets may run in the target's dtype (bf16 / fp16) and answer in
  // the caller's.
  auto x = codes.to(conv_in->conv->weight.scalar_type());
  x = up() ? x : torch::pixel_unshuffle(x, 2);
  x = conv_in(x);
  for (const auto& block : *blocks) x = block->as<RowCausalResBlock>()->forward(x);
  x = conv_out(torch::silu(x));
  return (up() ? torch::pixel_shuffle(x, 2) : x).to(codes.scalar_type());
}

MuloResamplersImpl::MuloResamplersImpl(const MuloResamplerConfig& c) {
  up = register_module("up", MuloResampler(c, +1));
  down = register_module("down", MuloResampler(c, -1));
}

}  // namespace vispec
