// How the tensor names of a weights file map onto a module's parameter names, as a model config's gpt or vq
// section declares it: which dict of a torch.save checkpoint holds the weights, a prefix to strip (a
// DistributedDataParallel "module.", a wrapper's "model.") and prefix renames (another codebase's names for the
// same tensors). Plain data: no torch.
//   gpt: {weights: last.pt, state_dict_key: ema, strip_prefix: module., rename: {lm_head.: output.}}
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace vispec {

struct WeightKeys {
  std::string state_dict_key;  // torch.save files: the dotted key of the state dict ("ema", "model.sd")
  std::string strip_prefix;    // removed from every file name that starts with it
  std::vector<std::pair<std::string, std::string>> renames;  // then: the first `from` prefix that matches -> `to`

  bool renaming() const { return !strip_prefix.empty() || !renames.empty(); }
  // The module name of file tensor `name`.
  std::string map(const std::string& name) const;
};

}  // namespace vispec
