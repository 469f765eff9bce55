#include "models/text/text_encoder.h"

#include <filesystem>

#include "core/check.h"
#include "models/checkpoints/load.h"

namespace vispec {

namespace fs = std::filesystem;

TextEncoderFiles text_encoder_files(const ModelConfig& model) {
  VISPEC_CHECK(model.has_text_encoder, model.file, ": no text_encoder");
  const fs::path dir(model.text_encoder_dir);
  TextEncoderFiles f{(dir / "config.json").string(), (dir / "spiece.model").string(), model.text_encoder_weights};
  for (const auto& [path, what] :
       {std::pair<std::string, const char*>{f.config, "T5's config"}, {f.tokenizer, "T5's tokenizer"}})
    VISPEC_CHECK(fs::exists(path), path, ": no such file (", what, "; ", model.file, ": text_encoder.dir)");
  if (f.weights.empty()) {
    for (const char* name :
         {"model.safetensors.index.json", "model.safetensors", "pytorch_model.bin.index.json", "pytorch_model.bin"})
      if (f.weights.empty() && fs::exists(dir / name)) f.weights = (dir / name).string();
    VISPEC_CHECK(!f.weights.empty(), model.text_encoder_dir,
                 ": no model.safetensors[.index.json] or "
                 "pytorch_model.bin[.index.json] (",
                 model.file, ": text_encoder.dir)");
  }
  return f;
}

T5Config text_encoder_config(const ModelConfig& model) {
  const auto files = text_encoder_files(model);
  const T5Config c = read_t5_config(files.config);
  VISPEC_CHECK(c.d_model == model.gpt.caption_dim, files.config, ": d_model ", c.d_model, " is not gpt.caption_dim ",
               model.gpt.caption_dim, " of ", model.file);
  return c;
}

namespace {
void check_vocabulary(const T5Config& config, const T5Tokenizer& tokenizer, const std::string& path) {
  VISPEC_CHECK(tokenizer.vocab_size() <= config.vocab_size, path, ": ", tokenizer.vocab_size(),
               " tokens do not fit the encoder's vocab_size ", config.vocab_size);
}
}  // namespace

TextEncoder::TextEncoder(const ModelConfig& model, torch::Device device) : max_length_(model.text_encoder_max_length) {
  const auto files = text_encoder_files(model);
  const auto config = text_encoder_config(model);
  tokenizer_ = std::make_unique<T5Tokenizer>(files.tokenizer);
  check_vocabulary(config, *tokenizer_, files.tokenizer);
  encoder_ = T5Encoder(config, torch::TensorOptions().device(device).dtype(model_dtype(model.text_encoder_dtype)));
  load_weights(*encoder_, files.weights, t5_encoder_ignored_prefixes());
  encoder_->eval();
}

torch::Tensor TextEncoder::encode(const std::string& caption) {
  torch::NoGradGuard no_grad;
  const auto ids = tokenizer_->encode(caption, max_length_);
  const auto input = torch::tensor(ids, torch::kInt64).unsqueeze(0);
  return encoder_->forward(input)[0].to(torch::kCPU, torch::kFloat32);
}

void check_text_encoder_weights(const ModelConfig& model) {
  if (!model.has_text_encoder) return;
  const auto files = text_encoder_files(model);
  const auto config = text_encoder_config(model);
  check_vocabulary(config, T5Tokenizer(files.tokenizer), files.tokenizer);  // and it is a SentencePiece model
  check_weights_file(*T5Encoder(config, torch::TensorOptions().device(torch::kMeta)), files.weights,
                     t5_encoder_ignored_prefixes());
}

}  // namespace vispec
