// drafters.eagle_head: an EAGLE head (one decoder layer over the target's features and tokens) that drafts the
// trees of EAGLE-1/2, LANTERN, Cool-SD and ADT-Tree. Trained by `vispec train eagle-head`, or written by the EAGLE
// or LANTERN repositories (models/checkpoints/eagle_repo_names.h).
#include "decoding/common/decoder_registry.h"
#include "decoding/common/drafter_registry.h"

namespace vispec {
namespace {

DrafterEntry eagle_head_entry() {
  DrafterEntry e;
  e.name = "eagle_head";
  e.what = "drafts with an EAGLE head";
  e.configured = [](const ModelConfig& m) { return !m.eagle_head.empty(); };
  e.weight_files = [](const ModelConfig& m) {
    return std::map<std::string, std::string>{{"eagle_head", m.eagle_head}};
  };
  e.check_weights = [](const ModelConfig& m) { (void)load_eagle_drafter(m.eagle_head, m); };  // small: read whole
  e.load = [](const ModelConfig& m, const VqModel&, const c10::TensorOptions& options, DecoderModels& models) {
    models.eagle = load_eagle_drafter(m.eagle_head, m);
    models.eagle->to(options.device(), options.dtype().toScalarType());
    models.eagle->eval();
  };
  return e;
}
const DrafterRegistration kEagleHeadRegistration(eagle_head_entry());

}  // namespace
}  // namespace vispec
