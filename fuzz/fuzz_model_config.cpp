// The model config parser (models/model_config.h).
#include "fuzz/fuzz_input.h"
#include "models/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = vispec::fuzz::write_input(data, size, "model.yaml");
  try {
    const auto model = vispec::load_model_config(path);
    for (const auto& name : model.classes) model.class_id(name);
    model.class_id("9");
  } catch (const vispec::Error&) {
  }
  return 0;
}
