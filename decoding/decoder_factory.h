// The single place that maps decoder names to decoders. Throws, naming the job file line, on an unknown
// name, an unknown parameter or a value out of range.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "decoding/decoder.h"
#include "decoding/sampler.h"
#include "io/decoder_spec.h"
#include "models/gpt.h"

namespace vispec {

// The networks a decoder may use, loaded once per worker.
struct DecoderModels {
  Gpt target{nullptr};
};

std::vector<std::string> known_decoders();
// Checks name and parameters without building anything (run before any output is written).
void validate_decoder_spec(const DecoderSpec& spec);
SamplingParams sampling_params(const DecoderSpec& spec);
std::unique_ptr<Decoder> make_decoder(const DecoderSpec& spec, const DecoderModels& models);

}  // namespace vispec
