// A decoder section of a job or bench file, parsed once into what every user of it reads: the worker and the
// bench build the decoder from it, the fingerprint records its fields (defaults filled in, so `{name: sd}` and
// `{name: sd, gamma: 4}` are the same job), the planner checks it against the model config before any output
// is written. Plain data, no torch; decoding/common/decoder_registry.h turns it into a decoder.
#pragma once

#include <any>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "decoding/common/acceptance_params.h"
#include "decoding/common/sampling_params.h"
#include "io/decoder_spec.h"

namespace vispec {

struct ModelConfig;
struct SamplingDefaults;

struct DecoderConfig {
  std::string name;
  DecoderSpec spec;                   // as written, for messages naming its lines
  SamplingParams sampling;            // cfg_scale, temperature, top_k, top_p: every decoder's
  bool takes_rule = false;            // verifies drafts by an acceptance rule (`accept` and its keys)
  AcceptanceParams accept;            // that rule (defaults where takes_rule is false)
  int64_t neighbours = 0;             // codebook neighbours the rule or method reads per code (0: none)
  std::vector<std::string> drafters;  // what load_decoder_models() loads: decoding/common/drafter_registry.h
  std::any method;                    // the decoder's own settings (its file's type: SdSettings, TreeShape, ...)
  // Every field read, defaults filled in: numbers and words. The decoder's identity.
  std::map<std::string, double> numbers;
  std::map<std::string, std::string> words;
  std::set<std::string> unset;  // fields without a default that the section leaves out

  template <class T>
  const T& settings() const {
    return std::any_cast<const T&>(method);
  }
};

// Parses and checks a decoder section: its name, then that every field is one the decoder reads, then every
// value. Throws "file:line: decoder.field: ..." on the first problem. The sampling fields the section leaves
// out take the model config's `sampling:` values where it sets them (model_defaults), else vispec's defaults.
DecoderConfig parse_decoder(const DecoderSpec& spec);
DecoderConfig parse_decoder(const DecoderSpec& spec, const SamplingDefaults& model_defaults);
// What needs the model config: the drafters the decoder reads are configured, its neighbour count and tree
// widths fit the codebook and vocabulary.
void check_decoder_model(const DecoderConfig& config, const ModelConfig& model);
// Weight files beyond the target and VQ that the decoder reads (role -> path): part of a job's identity.
std::map<std::string, std::string> decoder_weight_files(const DecoderConfig& config, const ModelConfig& model);

std::vector<std::string> known_decoders();  // sorted
// `vispec decoders`: each decoder's one-line summary, drafters and fields with their defaults.
std::string describe_decoders();

}  // namespace vispec
