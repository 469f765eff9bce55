// Planned samples -> the decode requests a decoder takes: their ids, the job's seed, and the conditions their
// prompts name: class ids, or captions, encoded by the model's text encoder or read from features files, or a
// prompted model's token ids (tokenised when planned), then left-padded as LlamaGen does (models/gpt/conditions.h).
#pragma once

#include <memory>
#include <string>

#include "decoding/common/decoder.h"
#include "models/model_config.h"
#include "models/text/text_encoder.h"
#include "workers/job_plan.h"

namespace vispec {

class RequestBuilder {
 public:
  // Loads the model's text encoder onto `device` if it has one.
  RequestBuilder(const ModelConfig& model, uint64_t seed, torch::Device device);
  // The request of `count` consecutive planned samples (a batch of a unit, or of a bench chunk).
  DecodeRequest operator()(const PlannedSample* first, int64_t count);

 private:
  torch::Tensor caption_features(const PlannedSample& sample);

  GptConfig gpt_;
  uint64_t seed_;
  std::unique_ptr<TextEncoder> text_encoder_;
  std::string text_encoder_source_;  // its weights, for a line about them
  // The last caption's features: the images of one prompt are consecutive samples, encoded once.
  std::string last_prompt_;
  torch::Tensor last_features_;
};

}  // namespace vispec
