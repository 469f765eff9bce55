#include "models/vq/load_vq.h"

#include "models/checkpoints/file_extras.h"
#include "models/checkpoints/load.h"
#include "models/model_config.h"

namespace vispec {

VqModel load_vq(const ModelConfig& config, torch::Device device) {
  VqModel vq(config.vq);
  load_weights(*vq, config.vq_weights, kVqFileExtras, config.vq_keys);
  vq->to(device);
  vq->eval();
  return vq;
}

}  // namespace vispec
