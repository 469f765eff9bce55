#include "models/checkpoints/head_file.h"

#include "core/check.h"

namespace vispec {

Metadata head_metadata(const std::string& kind, const ModelConfig& target) {
  return {{"kind", kind},
          {"model", target.name},
          {"hidden_dim", std::to_string(target.gpt.dim)},
          {"vocab_size", std::to_string(target.gpt.vocab_size)},
          {"grid_size", std::to_string(target.gpt.grid_size)},
          {"hidden_kind", "pre_norm"}};
}

void check_head_file(const Metadata& metadata, const std::string& path, const std::string& kind,
                     const ModelConfig& target) {
  const auto named = metadata.find("kind");
  VISPEC_CHECK(named == metadata.end() || named->second == kind, path, ": a vispec '", named->second, "' file, not an ",
               kind, " file");
  for (const auto& [field, expected] : head_metadata(kind, target)) {
    auto it = metadata.find(field);
    VISPEC_CHECK(it != metadata.end(), path, ": metadata '", field, "' missing (not a vispec ", kind, " file?)");
    VISPEC_CHECK(it->second == expected, path, ": ", field, " is '", it->second, "' but ", target.file, " needs '",
                 expected, "'");
  }
}

}  // namespace vispec
