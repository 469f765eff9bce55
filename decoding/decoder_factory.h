// The single place that maps decoder names to decoders. Throws, naming the job file line, on an unknown
// name, an unknown parameter, a value out of range or a drafter the model config does not provide.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "decoding/acceptance.h"
#include "decoding/adt_tree.h"
#include "decoding/codebook_neighbours.h"
#include "decoding/decoder.h"
#include "decoding/draft_tree.h"
#include "decoding/mulo_sd.h"
#include "decoding/sampler.h"
#include "decoding/ssd.h"
#include "decoding/static_tree.h"
#include "io/decoder_spec.h"
#include "models/eagle_drafter.h"
#include "models/gpt.h"
#include "models/model_config.h"
#include "models/vq.h"

namespace vispec {

// The networks a decoder may use, on one device, in eval mode. load_decoder_models() fills what the spec
// needs from the model config's drafters section.
struct DecoderModels {
  Gpt target{nullptr};
  Gpt draft_gpt{nullptr};
  EagleDrafter eagle{nullptr};
  SsdHeads ssd{nullptr};
  Gpt mulo_gpt{nullptr};                // MuLo-SD: the half-resolution drafter,
  MuloResamplers mulo_resamplers{nullptr};  // its U_2 / D_2
  VqModel vq{nullptr};                  // and the tokenizer whose codes they map
  std::shared_ptr<const CodebookNeighbours> neighbours;
};

std::vector<std::string> known_decoders();
// Checks name and parameters without building anything (run before any output is written); with a model
// config, also that it provides the drafters the decoder needs.
void validate_decoder_spec(const DecoderSpec& spec);
void validate_decoder_spec(const DecoderSpec& spec, const ModelConfig& model);
SamplingParams sampling_params(const DecoderSpec& spec);
AcceptanceParams acceptance_params(const DecoderSpec& spec);
TreeShape tree_shape(const DecoderSpec& spec);  // depth, tree_k, total_tokens
AdtParams adt_params(const DecoderSpec& spec);   // ADT-Tree's beta, steps and bounds
StaticTree static_tree(const DecoderSpec& spec); // eagle1/lanternpp/coolsd's `tree` (default naive_extend_57)
SsdParams ssd_params(const DecoderSpec& spec);   // SSD's kh, kv, r, b, i
MuloParams mulo_params(const DecoderSpec& spec); // MuLo-SD's tau, k, delta, radius (l), rows
// Weight files beyond the target and VQ that the decoder reads (role -> path): part of a job's identity.
std::map<std::string, std::string> decoder_weight_files(const DecoderSpec& spec, const ModelConfig& model);

DecoderModels load_decoder_models(const DecoderSpec& spec, const ModelConfig& model, Gpt target, VqModel vq,
                                  torch::Device device);
std::unique_ptr<Decoder> make_decoder(const DecoderSpec& spec, const DecoderModels& models);

}  // namespace vispec
