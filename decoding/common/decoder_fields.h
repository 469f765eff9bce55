// Reading one decoder section of a job or bench file, field by field. Each decoder's file reads its own
// fields here, each once, with its default and its check, so the fields a decoder accepts are exactly those
// its file reads: nothing else lists them. A bad value fails as "file:line: decoder.field: message".
//
// The same reading code runs twice (decoding/common/decoder_registry.cpp): first over no fields at all
// (DecoderFields::defaults), which gives every field the decoder knows, with its default, and never fails
// (defaults pass their own checks); then over the job's fields, once each of them is known to be one of
// those. So a misspelt field is reported as unknown before any check of another field runs.
// Plain data, no torch.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "io/decoder_spec.h"

namespace vispec {

class DecoderFields {
 public:
  explicit DecoderFields(const DecoderSpec& spec);
  // Every read returns its default; checks are not expected to fail (a default that does is our bug).
  static DecoderFields defaults(const std::string& name);

  // A number, or `fallback` when the section leaves it out; check it with require().
  double number(const std::string& key, double fallback);
  // A number with no default (Cool-SD's mu: derived from other fields unless given); part of the identity only
  // when given.
  std::optional<double> optional_number(const std::string& key);
  // A whole number in [lo, hi].
  int64_t whole(const std::string& key, int64_t fallback, int64_t lo, int64_t hi);
  // A word (accept: lantern, tree: naive_extend_57), passed through `parse`, whose vispec::Error is reported
  // against the field.
  template <class T>
  T word(const std::string& key, const std::string& fallback, const std::function<T(const std::string&)>& parse) {
    const std::string w = word(key, fallback);
    try {
      return parse(w);
    } catch (const std::exception& e) {
      fail(key, e.what());
    }
  }
  std::string word(const std::string& key, const std::string& fallback);

  void require(bool ok, const std::string& key, const std::string& message) const {
    if (!ok) fail(key, message);
  }
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  std::string where(const std::string& key) const { return spec_.where_of(key); }
  // Whether the section names `key` (not a default).
  bool given(const std::string& key) const { return spec_.params.count(key) || spec_.words.count(key); }
  const DecoderSpec& spec() const { return spec_; }

  // What was read, defaults filled in: the decoder's identity (fingerprints) and its listing.
  const std::map<std::string, double>& numbers() const { return numbers_; }
  const std::map<std::string, std::string>& words() const { return words_; }
  const std::set<std::string>& unset() const { return unset_; }  // optional numbers left out

 private:
  DecoderFields(const DecoderSpec& spec, bool defaults_only) : spec_(spec), defaults_only_(defaults_only) {}
  DecoderSpec spec_;
  bool defaults_only_ = false;
  std::map<std::string, double> numbers_;
  std::map<std::string, std::string> words_;
  std::set<std::string> unset_;
};

}  // namespace vispec
