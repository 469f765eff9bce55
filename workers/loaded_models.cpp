#include "workers/loaded_models.h"

#include "models/checkpoints/load.h"
#include "models/checkpoints/file_extras.h"
#include "models/vq/load_vq.h"

namespace vispec {

void check_model_weights(const ModelConfig& config) {
  check_weights_file(*Gpt(config.gpt, torch::TensorOptions().device(torch::kMeta)), config.gpt_weights, kGptFileExtras,
                     config.gpt_keys);
  check_weights_file(*VqModel(config.vq), config.vq_weights, kVqFileExtras, config.vq_keys);
}

LoadedModels load_models(const ModelConfig& config, torch::Device device) {
  LoadedModels m;
  // Made on the device in the model's dtype, then filled from the file: no float32 host copy of the weights.
  const auto options = torch::TensorOptions().device(device).dtype(model_dtype(config.dtype));
  m.gpt = Gpt(config.gpt, options, /*random_init=*/false);
  load_weights(*m.gpt, config.gpt_weights, kGptFileExtras, config.gpt_keys);
  m.gpt->eval();
  m.vq = load_vq(config, device);
  return m;
}

}  // namespace vispec
