#include "workers/loaded_models.h"

#include "models/checkpoints/load.h"

namespace vispec {

namespace {
// LlamaGen checkpoints may carry its RoPE table or cache buffers (recomputed here), its VQ a usage counter.
const std::vector<std::string> kGptExtras = {"freqs_cis", "causal_mask"};
const std::vector<std::string> kVqExtras = {"quantize.codebook_used"};
}  // namespace

void check_model_weights(const ModelConfig& config) {
  check_weights_file(*Gpt(config.gpt, torch::TensorOptions().device(torch::kMeta)), config.gpt_weights, kGptExtras,
                     config.gpt_keys);
  check_weights_file(*VqModel(config.vq), config.vq_weights, kVqExtras, config.vq_keys);
}

LoadedModels load_models(const ModelConfig& config, torch::Device device) {
  LoadedModels m;
  // Made on the device in the model's dtype, then filled from the file: no float32 host copy of the weights.
  const auto options = torch::TensorOptions().device(device).dtype(model_dtype(config.dtype));
  m.gpt = Gpt(config.gpt, options, /*random_init=*/false);
  load_weights(*m.gpt, config.gpt_weights, kGptExtras, config.gpt_keys);
  m.gpt->eval();
  m.vq = VqModel(config.vq);
  load_weights(*m.vq, config.vq_weights, kVqExtras, config.vq_keys);
  m.vq->to(device);  // float32 whatever the GPT's dtype: the pixels stay those of the reference decoder
  m.vq->eval();
  return m;
}

}  // namespace vispec
