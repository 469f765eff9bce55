// Captions -> the features a text-conditional GPT takes: T5's tokenizer and encoder from the model config's
// text_encoder section, as LlamaGen's T5Embedder computes them (tokenise to at most max_length ids with "</s>"
// last, encode, keep the outputs at the caption's own tokens). Each caption is encoded alone, unpadded: its
// features never depend on which captions share its batch (padding is masked out of T5's attention, so they
// equal a padded batch's but for float rounding).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "models/model_config.h"
#include "models/text/t5_encoder.h"
#include "models/text/t5_tokenizer.h"

namespace vispec {

// Where the model config's text encoder is: DIR/config.json, DIR/spiece.model, and its weights (the config's
// `weights`, else the first of model.safetensors.index.json, model.safetensors, pytorch_model.bin.index.json,
// pytorch_model.bin in DIR). Throws an Error naming what is missing.
struct TextEncoderFiles {
  std::string config, tokenizer, weights;
};
TextEncoderFiles text_encoder_files(const ModelConfig& model);
// The architecture from config.json, checked against the GPT it feeds (d_model = gpt.caption_dim).
T5Config text_encoder_config(const ModelConfig& model);

class TextEncoder {
 public:
  TextEncoder(const ModelConfig& model, torch::Device device);
  // [L, d_model] float32 on the CPU, L = the caption's token count ("</s>" included).
  torch::Tensor encode(const std::string& caption);
  const T5Tokenizer& tokenizer() const { return *tokenizer_; }

 private:
  std::unique_ptr<T5Tokenizer> tokenizer_;
  T5Encoder encoder_{nullptr};
  int64_t max_length_;
};

// Checks the text encoder's files: the tokenizer loads and fits the vocabulary, the weights fit the config
// (names and shapes only). Before a job writes anything; nothing if the model has no text encoder.
void check_text_encoder_weights(const ModelConfig& model);

}  // namespace vispec
