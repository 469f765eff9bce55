#include "workers/loaded_models.h"

#include "models/load.h"

namespace vispec {

LoadedModels load_models(const ModelConfig& config, torch::Device device) {
  LoadedModels m;
  m.gpt = Gpt(config.gpt);
  // LlamaGen checkpoints may carry its RoPE table or cache buffers; they are recomputed here.
  load_weights(*m.gpt, config.gpt_weights, {"freqs_cis", "causal_mask"});
  m.gpt->to(device);
  m.gpt->eval();
  m.vq = VqModel(config.vq);
  load_weights(*m.vq, config.vq_weights, {"quantize.codebook_used"});
  m.vq->to(device);
  m.vq->eval();
  return m;
}

}  // namespace vispec
