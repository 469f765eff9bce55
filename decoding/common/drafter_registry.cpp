#include "decoding/common/drafter_registry.h"

#include "core/check.h"

namespace vispec {

namespace {
// Function-local, so that registrations from other files' static initialisers find it constructed.
std::map<std::string, DrafterEntry>& drafter_registry() {
  static std::map<std::string, DrafterEntry> entries;
  return entries;
}
}  // namespace

DrafterRegistration::DrafterRegistration(DrafterEntry entry) {
  VISPEC_ASSERT(entry.configured && entry.weight_files && entry.check_weights && entry.load, "drafter '", entry.name,
                "' registered without one of its functions");
  const auto name = entry.name;
  VISPEC_ASSERT(drafter_registry().emplace(name, std::move(entry)).second, "drafter '", name, "' registered twice");
}

const DrafterEntry& drafter_entry(const std::string& name) {
  const auto it = drafter_registry().find(name);
  VISPEC_ASSERT(it != drafter_registry().end(), "no drafter '", name, "' is registered");
  return it->second;
}

std::vector<std::string> known_drafters() {
  std::vector<std::string> names;
  for (const auto& [name, entry] : drafter_registry()) names.push_back(name);
  return names;
}

}  // namespace vispec
