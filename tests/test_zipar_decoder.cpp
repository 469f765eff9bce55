// ZipAR (decoding/zipar.cpp): its step count is the schedule's formula 2W + (H - 2)s; with s = W it is AR,
// token for token at temperature 1; with s < W rows 0 and 1 still equal AR's (row 1 sees a complete row 0 and
// no cell after its own: the causal-by-position mask over out-of-order entries) while later rows differ.
#include <gtest/gtest.h>

#include "core/check.h"
#include "decoding/ar.h"
#include "decoding/common/decoder_registry.h"
#include "decoding/zipar.h"
#include "models/checkpoints/load.h"
#include "models/model_config.h"
#include "exact_distribution.h"
#include "tiny_models.h"

namespace vispec {

TEST(ZipAr, StepCountFollowsTheScheduleFormula) {
  EXPECT_EQ(zipar_forwards(4, 4, 1), 10);
  EXPECT_EQ(zipar_forwards(4, 4, 2), 12);
  EXPECT_EQ(zipar_forwards(4, 4, 4), 16);    // AR
  EXPECT_EQ(zipar_forwards(16, 16, 4), 88);  // the embedded model's grid
  EXPECT_EQ(zipar_forwards(16, 16, 8), 144);
  EXPECT_EQ(zipar_forwards(32, 32, 4), 184);  // LlamaGen-XL 512: the paper reports 185 steps for 1024 tokens
  auto target = test::tiny_gpt(1);
  const auto p = test::guided_sampling(1.0);
  for (int64_t s : {1, 2, 3, 4, 9}) {
    const auto out = ZipArDecoder(target, p, s).decode(test::requests(0, 3));
    for (const auto& st : out.stats) EXPECT_EQ(st.target_forwards, zipar_forwards(4, 4, s)) << "s " << s;
  }
}

TEST(ZipAr, FullWindowIsArAndEarlyRowsMatchArAtAnyWindow) {
  const auto model = load_model_config(std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist.yaml");
  Gpt target(model.gpt);
  load_weights(*target, model.gpt_weights);
  target->eval();
  const auto p = test::guided_sampling(1.0);
  const auto r = test::requests(0, 4);
  const int64_t W = model.gpt.grid_size;
  const auto ar = ArDecoder(target, p).decode(r).tokens;
  EXPECT_TRUE(torch::equal(ZipArDecoder(target, p, W).decode(r).tokens, ar));
  for (int64_t s : {4, 8}) {
    const auto zip = ZipArDecoder(target, p, s).decode(r).tokens;
    EXPECT_TRUE(torch::equal(zip.narrow(1, 0, 2 * W), ar.narrow(1, 0, 2 * W))) << "s " << s;
    EXPECT_FALSE(torch::equal(zip, ar)) << "s " << s;  // lossy: later rows start before the row above is done
  }
}

TEST(ZipAr, JobFileWindowIsChecked) {
  DecoderSpec spec;
  spec.name = "zipar";
  spec.name_where = "job.yaml:3: decoder.name";
  parse_decoder(spec);
  spec.params["window"] = 0;
  spec.where["window"] = "job.yaml:4: decoder.window";
  try {
    parse_decoder(spec);
    FAIL() << "accepted window 0";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("job.yaml:4: decoder.window: must be a whole number", 0), 0u) << e.what();
  }
  spec.params.clear();
  spec.params["delta"] = 0.1;  // no acceptance rule: nothing is drafted
  spec.where["delta"] = "job.yaml:4: decoder.delta";
  EXPECT_THROW(parse_decoder(spec), Error);
}

}  // namespace vispec
