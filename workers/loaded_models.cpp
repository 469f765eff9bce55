#include "workers/loaded_models.h"

#include "models/load.h"

namespace vispec {

LoadedModels load_models(const ModelConfig& config, torch::Device device) {
  LoadedModels m;
  // Made on the device in the model's dtype, then filled from the file: no float32 host copy of the weights.
  m.gpt = Gpt(config.gpt, torch::TensorOptions().device(device).dtype(model_dtype(config.dtype)));
  // LlamaGen checkpoints may carry its RoPE table or cache buffers; they are recomputed here.
  load_weights(*m.gpt, config.gpt_weights, {"freqs_cis", "causal_mask"});
  m.gpt->eval();
  m.vq = VqModel(config.vq);
  load_weights(*m.vq, config.vq_weights, {"quantize.codebook_used"});
  m.vq->to(device);  // float32 whatever the GPT's dtype: the pixels stay those of the reference decoder
  m.vq->eval();
  return m;
}

}  // namespace vispec
