// drafters.mulo: MuLo-SD's half-resolution drafter, the target's architecture on the half grid, and its
// row-causal resamplers U_2 / D_2 between the two grids, which read the target's VQ codebook. Trained by
// `vispec train gpt --mulo` and `vispec train mulo-resamplers`.
#include "decoding/common/decoder_registry.h"
#include "decoding/common/drafter_registry.h"
#include "models/checkpoints/load.h"
#include "models/checkpoints/file_extras.h"

namespace vispec {
namespace {

DrafterEntry mulo_entry() {
  DrafterEntry e;
  e.name = "mulo";
  e.what = "drafts at half resolution";
  e.configured = [](const ModelConfig& m) { return m.has_mulo(); };
  e.weight_files = [](const ModelConfig& m) {
    return std::map<std::string, std::string>{{"mulo_gpt", m.mulo.gpt_weights},
                                              {"mulo_resamplers", m.mulo.resamplers_weights}};
  };
  e.check_weights = [](const ModelConfig& m) {
    check_weights_file(*Gpt(m.mulo.gpt, torch::TensorOptions().device(torch::kMeta)), m.mulo.gpt_weights,
                       kGptFileExtras, m.mulo.gpt_keys);
    check_weights_file(*MuloResamplers(m.mulo.resamplers), m.mulo.resamplers_weights);
  };
  e.load = [](const ModelConfig& m, const VqModel& vq, const c10::TensorOptions& options, DecoderModels& models) {
    models.mulo_gpt = Gpt(m.mulo.gpt, options, /*random_init=*/false);
    load_weights(*models.mulo_gpt, m.mulo.gpt_weights, kGptFileExtras, m.mulo.gpt_keys);
    models.mulo_gpt->eval();
    models.mulo_resamplers = MuloResamplers(m.mulo.resamplers);
    load_weights(*models.mulo_resamplers, m.mulo.resamplers_weights);
    models.mulo_resamplers->to(options.device(), options.dtype().toScalarType());
    models.mulo_resamplers->eval();
    models.vq = vq;
  };
  return e;
}
const DrafterRegistration kMuloRegistration(mulo_entry());

}  // namespace
}  // namespace vispec
