// Where decoders come from. Each decoder's file registers an entry at its end: its name, a one-line summary,
// the drafters it reads, how it reads its fields and how it is built. Adding a decoder touches its own file,
// its test and docs/decoders.md; nothing here names any decoder.
//
//   namespace {
//   DecoderEntry sd_entry() {
//     DecoderEntry e;
//     e.name = "sd";
//     e.summary = "speculative decoding with a small draft GPT (Leviathan et al.)";
//     e.drafters = {"gpt"};  // decoding/common/drafter_registry.h
//     e.read = [](DecoderFields& f, DecoderConfig& c) {
//       c.method = SdSettings{f.whole("gamma", 4, 1, 64)};
//       read_rule(f, c, "exact");
//     };
//     e.build = [](const DecoderConfig& c, const DecoderModels& m) -> std::unique_ptr<Decoder> { ... };
//     return e;
//   }
//   const DecoderRegistration kSdRegistration(sd_entry());
//   }  // namespace
//
// The registrations run before main() (the build links every object of the decoding library: CMakeLists.txt).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "decoding/common/codebook_neighbours.h"
#include "decoding/common/decoder.h"
#include "decoding/common/decoder_config.h"
#include "decoding/common/decoder_fields.h"
#include "models/drafters/eagle_drafter.h"
#include "models/gpt/gpt.h"
#include "models/model_config.h"
#include "models/drafters/mulo_resamplers.h"
#include "models/drafters/ssd_heads.h"
#include "models/vq/vq.h"

namespace vispec {

// The networks a decoder may use, on one device, in eval mode: the target, and what load_decoder_models()
// loads for the decoder's drafters.
struct DecoderModels {
  Gpt target{nullptr};
  Gpt draft_gpt{nullptr};
  EagleDrafter eagle{nullptr};
  SsdHeads ssd{nullptr};
  Gpt mulo_gpt{nullptr};                                 // MuLo-SD: the half-resolution drafter,
  MuloResamplers mulo_resamplers{nullptr};               // its U_2 / D_2
  VqModel vq{nullptr};                                   // and the tokenizer whose codes they map
  std::shared_ptr<const CodebookNeighbours> neighbours;  // config.neighbours per code, when it reads any
};

struct DecoderEntry {
  std::string name;
  std::string summary;                // one line: the method and where it comes from
  std::vector<std::string> drafters;  // registered drafters' names (decoding/common/drafter_registry.h)
  // Reads the decoder's own fields (the sampling fields are read for every decoder) into config.method;
  // a decoder that verifies by a rule also calls read_rule().
  std::function<void(DecoderFields&, DecoderConfig&)> read;
  // Optional: checks against the model config beyond the drafters (tree widths against the vocabulary).
  std::function<void(const DecoderConfig&, const ModelConfig&)> check_model;
  std::function<std::unique_ptr<Decoder>(const DecoderConfig&, const DecoderModels&)> build;
};

// For a decoder that verifies drafts by an acceptance rule: reads the rule's fields (read_acceptance) into
// config.accept, `default_rule` when the job names none, and marks it as taking one.
void read_rule(DecoderFields& fields, DecoderConfig& config, const std::string& default_rule);

struct DecoderRegistration {
  explicit DecoderRegistration(DecoderEntry entry);
};

// Checks, before a job writes anything, that every drafter file the decoder reads fits its model: names and
// shapes from the files' headers (the GPT drafters, MuLo-SD's resamplers), the heads read and checked against
// the target as loading them does (they are small). One line naming the file if not.
void check_decoder_weights(const DecoderConfig& config, const ModelConfig& model);
// Loads what the decoder's drafters need (in the target's dtype, on `device`) and the codebook neighbours.
DecoderModels load_decoder_models(const DecoderConfig& config, const ModelConfig& model, Gpt target, VqModel vq,
                                  torch::Device device);
std::unique_ptr<Decoder> make_decoder(const DecoderConfig& config, const DecoderModels& models);

}  // namespace vispec
