#include "decoding/decoder_factory.h"

#include <algorithm>

#include "core/check.h"
#include "decoding/ar.h"

namespace vispec {

namespace {
const std::vector<std::string> kSamplingKeys = {"cfg_scale", "temperature", "top_k", "top_p"};

// Parameters each decoder accepts beyond the sampling chain.
std::vector<std::string> method_keys(const std::string& name) {
  if (name == "ar") return {};
  return {};
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}
}  // namespace

std::vector<std::string> known_decoders() { return {"ar"}; }

void validate_decoder_spec(const DecoderSpec& spec) {
  const auto names = known_decoders();
  VISPEC_CHECK(std::find(names.begin(), names.end(), spec.name) != names.end(), spec.name_where,
               ": unknown decoder '", spec.name, "' (known: ", join(names), ")");
  auto allowed = kSamplingKeys;
  for (const auto& k : method_keys(spec.name)) allowed.push_back(k);
  for (const auto& [key, value] : spec.params) {
    VISPEC_CHECK(std::find(allowed.begin(), allowed.end(), key) != allowed.end(), spec.where.at(key),
                 ": unknown parameter for decoder '", spec.name, "' (known: ", join(allowed), ")");
  }
  const auto p = sampling_params(spec);
  auto where = [&](const char* k) { return spec.where.count(k) ? spec.where.at(k) : spec.name_where; };
  VISPEC_CHECK(p.temperature >= 0, where("temperature"), ": must be >= 0");
  VISPEC_CHECK(p.top_k >= 0, where("top_k"), ": must be >= 0 (0 = off)");
  VISPEC_CHECK(p.top_p > 0 && p.top_p <= 1, where("top_p"), ": must be in (0, 1]");
  VISPEC_CHECK(p.cfg_scale >= 0, where("cfg_scale"), ": must be >= 0");
}

SamplingParams sampling_params(const DecoderSpec& spec) {
  SamplingParams p;
  p.cfg_scale = spec.get("cfg_scale", p.cfg_scale);
  p.temperature = spec.get("temperature", p.temperature);
  p.top_k = int64_t(spec.get("top_k", double(p.top_k)));
  p.top_p = spec.get("top_p", p.top_p);
  return p;
}

std::unique_ptr<Decoder> make_decoder(const DecoderSpec& spec, const DecoderModels& models) {
  validate_decoder_spec(spec);
  if (spec.name == "ar") return std::make_unique<ArDecoder>(models.target, sampling_params(spec));
  VISPEC_FAIL(spec.name_where, ": unknown decoder '", spec.name, "'");
}

}  // namespace vispec
