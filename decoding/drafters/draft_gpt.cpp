// drafters.gpt: a small GPT of the target's layout that drafts token by token (SD). Trained by
// `vispec train gpt --draft`; its checkpoint's names are the target's (drafters.gpt.keys).
#include "decoding/common/decoder_registry.h"
#include "decoding/common/drafter_registry.h"
#include "models/checkpoints/load.h"
#include "models/checkpoints/file_extras.h"

namespace vispec {
namespace {

DrafterEntry draft_gpt_entry() {
  DrafterEntry e;
  e.name = "gpt";
  e.what = "drafts with a small GPT";
  e.configured = [](const ModelConfig& m) { return m.has_draft_gpt(); };
  e.weight_files = [](const ModelConfig& m) {
    return std::map<std::string, std::string>{{"draft_gpt", m.draft_gpt_weights}};
  };
  e.check_weights = [](const ModelConfig& m) {
    check_weights_file(*Gpt(m.draft_gpt, torch::TensorOptions().device(torch::kMeta)), m.draft_gpt_weights,
                       kGptFileExtras, m.draft_gpt_keys);
  };
  e.load = [](const ModelConfig& m, const VqModel&, const c10::TensorOptions& options, DecoderModels& models) {
    models.draft_gpt = Gpt(m.draft_gpt, options, /*random_init=*/false);
    load_weights(*models.draft_gpt, m.draft_gpt_weights, kGptFileExtras, m.draft_gpt_keys);
    models.draft_gpt->eval();
  };
  return e;
}
const DrafterRegistration kDraftGptRegistration(draft_gpt_entry());

}  // namespace
}  // namespace vispec
