// The VQ tokenizer: shapes, LlamaGen's state-dict names, and lookup against the normalised codebook.
#include <gtest/gtest.h>

#include "models/vq/vq.h"
#include "tiny_models.h"

namespace vispec {

TEST(Vq, EncodeDecodeShapesAndCodesInRange) {
  torch::manual_seed(0);
  VqModel vq(test::tiny_vq_config());
  vq->eval();
  torch::NoGradGuard no_grad;
  auto x = torch::rand({3, 1, 16, 16}) * 2 - 1;
  auto codes = vq->encode(x);
  ASSERT_EQ(codes.sizes(), (std::vector<int64_t>{3, 64}));  // x2 down-sampling: 8x8 grid
  EXPECT_GE(codes.min().item<int64_t>(), 0);
  EXPECT_LT(codes.max().item<int64_t>(), 32);
  auto y = vq->decode_codes(codes, 8, 8);
  EXPECT_EQ(y.sizes(), x.sizes());
  // Decoding the codes of a decoded image's own latents is what training reconstructs: the train path
  // (straight-through) decodes exactly the looked-up codes.
  auto train = vq->forward_train(x);
  EXPECT_TRUE(torch::equal(train.codes, codes));
  EXPECT_LE((train.recon - y).abs().max().item<double>(), 1e-5);
}

TEST(Vq, NearestCodeUnderL2Normalisation) {
  VqModel vq(test::tiny_vq_config());
  auto e = vq->codebook();
  EXPECT_NEAR(e.norm(2, 1).mean().item<double>(), 1.0, 1e-5);
}

TEST(Vq, ParameterNamesFollowLlamaGen) {
  VqModel vq(test::tiny_vq_config());
  std::set<std::string> names;
  for (const auto& p : vq->named_parameters()) names.insert(p.key());
  for (const char* n :
       {"encoder.conv_in.weight", "encoder.conv_blocks.0.res.0.conv1.weight",
        "encoder.conv_blocks.0.downsample.conv.weight", "encoder.conv_blocks.1.attn.0.q.weight",
        "encoder.mid.1.proj_out.weight", "encoder.norm_out.weight", "quant_conv.weight", "quantize.embedding.weight",
        "post_quant_conv.bias", "decoder.conv_in.weight", "decoder.mid.0.norm1.weight",
        "decoder.conv_blocks.0.attn.1.k.bias", "decoder.conv_blocks.0.upsample.conv.weight",
        "decoder.conv_blocks.1.res.0.nin_shortcut.weight", "decoder.conv_out.weight"})
    EXPECT_TRUE(names.count(n)) << n;
}

}  // namespace vispec
