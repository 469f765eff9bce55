// The VQ tokenizer: shapes, LlamaGen's state-dict names, and lookup against the normalised codebook.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "core/check.h"

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

// A NaN in the encoder's weights would make every latent NaN, which the nearest-code search turns into code 0:
// a trainer would train on images of code 0. Tokenising fails in one line naming the VQ's file instead.
TEST(Vq, NonFiniteLatentsFailTokenisingInOneLineNamingTheWeights) {
  torch::manual_seed(0);
  VqModel vq(test::tiny_vq_config());
  vq->eval();
  const auto x = torch::rand({3, 1, 16, 16}) * 2 - 1;
  EXPECT_EQ(tokenize_images(vq, x, "vq.safetensors").sizes(), (std::vector<int64_t>{3, 64}));
  {
    torch::NoGradGuard no_grad;
    for (auto& p : vq->encoder->named_parameters())
      if (p.value().dim() == 4) {
        p.value().view(-1)[0] = std::numeric_limits<float>::quiet_NaN();
        break;
      }
  }
  try {
    tokenize_images(vq, x, "vq.safetensors");
    ADD_FAILURE() << "tokenised NaN latents";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "vq.safetensors: the VQ encoder's latents are not finite (NaN or infinity): a NaN in its weights?");
  }
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
