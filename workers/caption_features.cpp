#include "workers/caption_features.h"

#include <filesystem>

#include "core/check.h"

namespace vispec {

std::string resolve_features_path(const std::string& prompts_file, const std::string& file) {
  const std::filesystem::path p(file);
  if (p.is_absolute()) return file;
  return (std::filesystem::path(prompts_file).parent_path() / p).string();
}

std::string check_caption_features(const GptConfig& gpt, const std::string& path) {
  try {
    return caption_features_error(gpt, path, read_npy_header(path));
  } catch (const Error& e) {
    return e.what();
  }
}

std::string caption_features_error(const GptConfig& gpt, const std::string& path, const NpyArray& a) {
  if (a.descr != "<f4" && a.descr != "<f2" && a.descr != "<f8")
    return path + ": caption features of dtype '" + a.descr + "'; expected float32, float16 or float64";
  const auto& s = a.shape;
  const bool batched = s.size() == 3 && s[0] == 1;
  std::string shape;
  for (auto d : s) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
  if (!(s.size() == 2 || batched) || s.back() != gpt.caption_dim)
    return path + ": caption features of shape [" + shape + "]; expected [L, " + std::to_string(gpt.caption_dim) +
           "] or [1, L, " + std::to_string(gpt.caption_dim) + "]";
  const int64_t L = s[s.size() - 2];
  if (L < 1 || L > gpt.cls_token_num)
    return path + ": caption of " + std::to_string(L) + " tokens; the model takes 1 to " +
           std::to_string(gpt.cls_token_num);
  return "";
}

}  // namespace vispec
