// Where drafters come from: the trained networks a speculative decoder drafts with, each read from a section of
// the model config's `drafters:`. Each kind's file (decoding/drafters/) registers an entry: its name (the
// section's), what it is, whether a model config has it, its weight files, how its files are checked before a
// job writes anything and how it is loaded. A decoder names the drafters it reads in its DecoderEntry
// (`e.drafters = {"gpt"}`); nothing else names a drafter kind, so a new kind is its own file (plus a member of
// DecoderModels, its section in models/model_config and its test).
#pragma once

#include <c10/core/TensorOptions.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace vispec {

struct ModelConfig;
struct DecoderModels;
class VqModel;

struct DrafterEntry {
  std::string name;  // "gpt": the model config's drafters.gpt, and how a decoder names it
  std::string what;  // "drafts with a small GPT": for the message when a model config lacks it
  std::function<bool(const ModelConfig&)> configured;
  // Its weight files (role -> path): part of a job's identity.
  std::function<std::map<std::string, std::string>(const ModelConfig&)> weight_files;
  // Names and shapes from the files' headers (or the small heads read whole), one line naming the file if they
  // do not fit the model.
  std::function<void(const ModelConfig&)> check_weights;
  // Loads it into `models` in `options` (the target's device and dtype), in eval mode; vq: the target's.
  std::function<void(const ModelConfig&, const VqModel& vq, const c10::TensorOptions& options, DecoderModels& models)>
      load;
};

struct DrafterRegistration {
  explicit DrafterRegistration(DrafterEntry entry);
};

// The entry of a registered drafter; asserts that it is one (a decoder naming an unknown drafter is a bug).
const DrafterEntry& drafter_entry(const std::string& name);
std::vector<std::string> known_drafters();  // sorted

}  // namespace vispec
