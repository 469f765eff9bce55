// drafters.ssd_heads: SSD's spatial heads, each drafting the cell at one offset from the newest token's
// features. Trained by `vispec train ssd-heads`.
#include "decoding/common/decoder_registry.h"
#include "decoding/common/drafter_registry.h"

namespace vispec {
namespace {

DrafterEntry ssd_heads_entry() {
  DrafterEntry e;
  e.name = "ssd_heads";
  e.what = "drafts with SSD heads";
  e.configured = [](const ModelConfig& m) { return !m.ssd_heads.empty(); };
  e.weight_files = [](const ModelConfig& m) { return std::map<std::string, std::string>{{"ssd_heads", m.ssd_heads}}; };
  e.check_weights = [](const ModelConfig& m) { (void)load_ssd_heads(m.ssd_heads, m); };  // small: read whole
  e.load = [](const ModelConfig& m, const VqModel&, const c10::TensorOptions& options, DecoderModels& models) {
    models.ssd = load_ssd_heads(m.ssd_heads, m);
    models.ssd->to(options.device(), options.dtype().toScalarType());
    models.ssd->eval();
  };
  return e;
}
const DrafterRegistration kSsdHeadsRegistration(ssd_heads_entry());

}  // namespace
}  // namespace vispec
