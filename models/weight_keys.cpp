#include "models/weight_keys.h"

namespace vispec {

std::string WeightKeys::map(const std::string& name) const {
  std::string n = !strip_prefix.empty() && name.rfind(strip_prefix, 0) == 0 ? name.substr(strip_prefix.size()) : name;
  for (const auto& [from, to] : renames)
    if (n.rfind(from, 0) == 0) return to + n.substr(from.size());
  return n;
}

}  // namespace vispec
