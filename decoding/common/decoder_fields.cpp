#include "decoding/common/decoder_fields.h"

#include <cmath>

#include "core/check.h"

namespace vispec {

DecoderFields::DecoderFields(const DecoderSpec& spec) : DecoderFields(spec, false) {}

DecoderFields DecoderFields::defaults(const std::string& name) {
  DecoderSpec spec;
  spec.name = name;
  spec.name_where = "decoder '" + name + "' defaults";
  return DecoderFields(spec, true);
}

void DecoderFields::fail(const std::string& key, const std::string& message) const {
  VISPEC_ASSERT(!defaults_only_, "decoder '", spec_.name, "': the default of ", key, " fails its check: ", message);
  VISPEC_FAIL(where(key), ": ", message);
}

double DecoderFields::number(const std::string& key, double fallback) {
  double v = fallback;
  if (!defaults_only_) {
    require(!spec_.words.count(key), key, "expected a number, got '" + spec_.word(key, "") + "'");
    v = spec_.get(key, fallback);
  }
  numbers_[key] = v;
  return v;
}

std::optional<double> DecoderFields::optional_number(const std::string& key) {
  if (defaults_only_ || !given(key)) {
    unset_.insert(key);
    return std::nullopt;
  }
  return number(key, 0.0);
}

int64_t DecoderFields::whole(const std::string& key, int64_t fallback, int64_t lo, int64_t hi) {
  const double v = number(key, double(fallback));
  require(v == std::floor(v) && v >= double(lo) && v <= double(hi), key,
          "must be a whole number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return int64_t(v);
}

std::string DecoderFields::word(const std::string& key, const std::string& fallback) {
  std::string w = fallback;
  if (!defaults_only_) {
    require(!spec_.params.count(key), key, "expected a word (e.g. " + fallback + "), got a number");
    w = spec_.word(key, fallback);
  }
  words_[key] = w;
  return w;
}

}  // namespace vispec
