// The decoder registry: every decoder file registered itself, a decoder's fields are exactly those its file
// reads, a job's decoder identity has defaults filled in, and bad fields are one line naming the field.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/check.h"
#include "decoding/common/decoder_registry.h"
#include "decoding/common/drafter_registry.h"
#include "decoding/ssd.h"
#include "models/model_config.h"

namespace vispec {

namespace {
DecoderSpec spec_of(const std::string& name) {
  DecoderSpec spec;
  spec.name = name;
  spec.name_where = "job.yaml:3: decoder.name";
  return spec;
}

void give(DecoderSpec& spec, const std::string& key, double value, int line) {
  spec.params[key] = value;
  spec.where[key] = "job.yaml:" + std::to_string(line) + ": decoder." + key;
}

std::string error_of(const DecoderSpec& spec) {
  try {
    parse_decoder(spec);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(DecoderRegistry, EveryDecoderFileRegisteredItself) {
  const std::vector<std::string> expected = {"adt_tree", "ar",      "coolsd",    "eagle1",  "eagle2",
                                             "gsd",      "lantern", "lanternpp", "mulo_sd", "scd",
                                             "sd",       "sjd",     "sjd_pac",   "ssd",     "zipar"};
  EXPECT_EQ(known_decoders(), expected);
  const auto listing = describe_decoders();
  for (const auto& name : expected) {
    EXPECT_NE(listing.find(name + ": "), std::string::npos) << name;
    const auto c = parse_decoder(spec_of(name));  // every decoder's defaults pass its own checks
    EXPECT_EQ(c.name, name);
    EXPECT_EQ(c.numbers.count("cfg_scale"), 1u) << name << ": the sampling fields are every decoder's";
  }
  EXPECT_NE(listing.find("gamma 4"), std::string::npos) << listing;
}

// A model config's `sampling:` values are the defaults of the sampling fields a decoder section leaves out;
// the fields it writes are its own, and the model's values enter the identity (the numbers) like any field.
TEST(DecoderRegistry, SamplingFieldsLeftOutTakeTheModelsDefaults) {
  SamplingDefaults model;
  model.cfg_scale = 4.0;
  model.top_k = 2000;
  for (const std::string name : {"ar", "sd", "eagle2", "mulo_sd"}) {
    const auto c = parse_decoder(spec_of(name), model);
    EXPECT_EQ(c.sampling.cfg_scale, 4.0) << name;
    EXPECT_EQ(c.sampling.top_k, 2000) << name;
    EXPECT_EQ(c.sampling.temperature, 1.0) << name;  // unset in the model: vispec's default
    EXPECT_EQ(c.numbers.at("cfg_scale"), 4.0) << name;
    EXPECT_NE(c.numbers, parse_decoder(spec_of(name)).numbers) << name;
  }
  auto written = spec_of("sd");
  give(written, "cfg_scale", 1.0, 4);  // no guidance, asked for
  give(written, "top_k", 0, 5);
  const auto c = parse_decoder(written, model);
  EXPECT_EQ(c.sampling.cfg_scale, 1.0);
  EXPECT_EQ(c.sampling.top_k, 0);
  EXPECT_EQ(c.numbers, parse_decoder(written).numbers);
}

TEST(DecoderRegistry, DefaultsFillTheIdentityAndTheMethodSettings) {
  auto written = spec_of("sd");
  give(written, "gamma", 4, 4);
  EXPECT_EQ(parse_decoder(spec_of("sd")).numbers, parse_decoder(written).numbers);
  give(written, "gamma", 5, 4);
  EXPECT_NE(parse_decoder(spec_of("sd")).numbers, parse_decoder(written).numbers);
  // The method's own defaults: each file's settings type.
  EXPECT_EQ(parse_decoder(spec_of("ssd")).settings<SsdParams>().kh, 5);
  EXPECT_EQ(parse_decoder(spec_of("lantern")).accept.rule, AcceptRule::kLantern);
  EXPECT_EQ(parse_decoder(spec_of("lantern")).neighbours, 1000);  // LANTERN's k: its neighbour table
  EXPECT_EQ(parse_decoder(spec_of("eagle2")).neighbours, 0);
  EXPECT_FALSE(parse_decoder(spec_of("zipar")).takes_rule);
  EXPECT_EQ(parse_decoder(spec_of("ssd")).drafters, std::vector<std::string>{"ssd_heads"});
}

TEST(DecoderRegistry, BadFieldsAreOneLineNamingTheField) {
  // An unknown field is named before another field's bad value, with the decoder's known fields.
  auto spec = spec_of("zipar");
  give(spec, "delta", 0.1, 4);  // no acceptance rule: nothing is drafted
  give(spec, "window", 0, 5);
  auto err = error_of(spec);
  EXPECT_EQ(err.rfind("job.yaml:4: decoder.delta: unknown parameter for decoder 'zipar' (known: cfg_scale, "
                      "temperature, top_k, top_p, window)",
                      0),
            0u)
      << err;
  spec.params.erase("delta");
  err = error_of(spec);
  EXPECT_EQ(err.rfind("job.yaml:5: decoder.window: must be a whole number in [1, 1024]", 0), 0u) << err;
  // A number where a word belongs, and a word where a number does.
  spec = spec_of("eagle1");
  give(spec, "tree", 57, 6);
  err = error_of(spec);
  EXPECT_EQ(err.rfind("job.yaml:6: decoder.tree: expected a word", 0), 0u) << err;
  spec = spec_of("sd");
  spec.words["gamma"] = "four";
  spec.where["gamma"] = "job.yaml:7: decoder.gamma";
  err = error_of(spec);
  EXPECT_EQ(err.rfind("job.yaml:7: decoder.gamma: expected a number, got 'four'", 0), 0u) << err;
  err = error_of(spec_of("warp_drive"));
  EXPECT_EQ(err.rfind("job.yaml:3: decoder.name: unknown decoder 'warp_drive' (known: adt_tree, ar,", 0), 0u) << err;
}

TEST(DecoderRegistry, ModelChecksNameTheMissingDrafter) {
  auto model = load_model_config(std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist.yaml");
  for (const auto& name : known_decoders()) check_decoder_model(parse_decoder(spec_of(name)), model);
  model.ssd_heads.clear();
  try {
    check_decoder_model(parse_decoder(spec_of("ssd")), model);
    FAIL() << "accepted ssd without heads";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("job.yaml:3: decoder.name: decoder 'ssd' drafts with SSD heads, but"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(decoder_weight_files(parse_decoder(spec_of("ssd")), model).count("ssd_heads"), 0u);
  auto spec = spec_of("lantern");
  give(spec, "k", double(model.vq.codebook_size), 4);
  EXPECT_THROW(check_decoder_model(parse_decoder(spec), model), Error);
}

TEST(DrafterRegistry, EveryDrafterFileRegisteredItselfAndEachNamesItsFiles) {
  EXPECT_EQ(known_drafters(), (std::vector<std::string>{"eagle_head", "gpt", "mulo", "ssd_heads"}));
  const auto model = load_model_config(std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist.yaml");
  for (const auto& name : known_drafters()) {
    const auto& d = drafter_entry(name);
    EXPECT_TRUE(d.configured(model)) << name;  // the embedded model has every kind
    for (const auto& [role, path] : d.weight_files(model)) EXPECT_FALSE(path.empty()) << name << " " << role;
    d.check_weights(model);  // its files fit the model
  }
  EXPECT_EQ(drafter_entry("mulo").weight_files(model).size(), 2u);  // the half-resolution GPT and its resamplers
  // Each drafter a decoder reads is a registered one, and its files are part of the decoder's identity.
  for (const auto& name : known_decoders())
    for (const auto& d : parse_decoder(spec_of(name)).drafters)
      for (const auto& [role, path] : drafter_entry(d).weight_files(model))
        EXPECT_EQ(decoder_weight_files(parse_decoder(spec_of(name)), model).at(role), path) << name;
}

}  // namespace vispec
