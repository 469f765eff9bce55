#include "io/yaml_util.h"

#include <algorithm>
#include <filesystem>

#include "core/check.h"

namespace vispec {

YAML::Node load_yaml_file(const std::string& path) {
  try {
    return YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    VISPEC_FAIL(path, ": cannot read file");
  } catch (const YAML::Exception& e) {
    VISPEC_FAIL(path, ":", e.mark.line + 1, ": invalid YAML: ", e.msg);
  }
}

YamlView::YamlView(YAML::Node node, std::string file, std::string path)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)) {}

std::string YamlView::where() const {
  // A node a --set override made has no position in the file: name the override instead.
  if (node_.IsDefined() && node_.Mark().is_null() && !path_.empty()) return "--set " + path_;
  std::string s = file_;
  const auto mark = node_.Mark();
  if (mark.line >= 0 && !mark.is_null()) s += ":" + std::to_string(mark.line + 1);
  s += ": ";
  s += path_.empty() ? "(top level)" : path_;
  return s;
}

void YamlView::fail(const std::string& message) const { VISPEC_FAIL(where(), ": ", message); }

bool YamlView::has(const std::string& key) const { return node_.IsMap() && node_[key] && !node_[key].IsNull(); }

bool YamlView::has_section(const std::string& key) const {
  if (node_.IsMap())
    for (const auto& kv : node_)  // the key's node: it has a place in the file where an empty value may not
      if (kv.first.IsScalar() && kv.first.Scalar() == key && kv.second.IsNull())
        YamlView(kv.first, file_, path_.empty() ? key : path_ + "." + key)
            .fail("an empty section: give its fields (" + key + ": {} for its defaults), or remove the line");
  return has(key);
}

YamlView YamlView::at(const std::string& key) const {
  const std::string child = path_.empty() ? key : path_ + "." + key;
  if (!node_.IsMap()) fail("expected a map with field '" + key + "'");
  if (!has(key)) VISPEC_FAIL(YamlView(node_, file_, child).where(), ": missing field");
  return YamlView(node_[key], file_, child);
}

std::string YamlView::key_name(const YAML::Node& key) const {
  // YAML allows a list or a map as a key ("? [a, b]: 1"); no vispec file has one.
  if (!key.IsScalar()) fail("a key that is a list or a map, not a field name");
  return key.Scalar();
}

std::vector<std::string> YamlView::keys() const {
  std::vector<std::string> out;
  if (node_.IsMap())
    for (const auto& kv : node_) out.push_back(key_name(kv.first));
  return out;
}

std::string YamlView::need_path(const std::string& key) const {
  const std::filesystem::path p(need<std::string>(key));
  if (p.is_absolute()) return p.string();
  return (std::filesystem::path(file_).parent_path() / p).lexically_normal().string();
}

void YamlView::reject_unknown_keys(const std::vector<std::string>& known) const {
  std::string list;
  for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
  if (!node_.IsMap()) {
    if (node_.IsNull()) return;  // an empty map's place: has_section refuses it where it is a section
    fail(std::string("expected a map of fields (known: ") + list + "), got " +
         (node_.IsSequence() ? "a list" : "a value"));
  }
  for (const auto& kv : node_) {
    const auto key = key_name(kv.first);
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      const std::string child = path_.empty() ? key : path_ + "." + key;
      VISPEC_FAIL(YamlView(kv.first, file_, child).where(), ": unknown field (known: ", list, ")");
    }
  }
}

namespace {
template <class T>
const char* type_name();
template <>
const char* type_name<int64_t>() {
  return "an integer";
}
template <>
const char* type_name<int>() {
  return "an integer";
}
template <>
const char* type_name<uint64_t>() {
  return "a non-negative integer";
}
template <>
const char* type_name<double>() {
  return "a number";
}
template <>
const char* type_name<bool>() {
  return "true or false";
}
template <>
const char* type_name<std::string>() {
  return "a string";
}
template <>
const char* type_name<std::vector<int64_t>>() {
  return "a list of integers";
}
template <>
const char* type_name<std::vector<std::string>>() {
  return "a list of strings";
}
}  // namespace

template <class T>
T YamlView::as() const {
  try {
    return node_.as<T>();
  } catch (const YAML::Exception&) {
    std::string got = node_.IsScalar() ? "'" + node_.Scalar() + "'" : (node_.IsSequence() ? "a list" : "a map");
    fail(std::string("expected ") + type_name<T>() + ", got " + got);
  }
}
template int64_t YamlView::as<int64_t>() const;
template int YamlView::as<int>() const;
template uint64_t YamlView::as<uint64_t>() const;
template double YamlView::as<double>() const;
template bool YamlView::as<bool>() const;
template std::string YamlView::as<std::string>() const;
template std::vector<int64_t> YamlView::as<std::vector<int64_t>>() const;
template std::vector<std::string> YamlView::as<std::vector<std::string>>() const;

namespace {
// A copy built in code, so it carries no file position (Mark::null_mark()): errors then name the override.
YAML::Node unmarked(const YAML::Node& node) {
  if (node.IsScalar()) return YAML::Node(node.Scalar());
  if (node.IsSequence()) {
    YAML::Node out(YAML::NodeType::Sequence);
    for (const auto& item : node) out.push_back(unmarked(item));
    return out;
  }
  if (node.IsMap()) {
    YAML::Node out(YAML::NodeType::Map);
    for (const auto& kv : node) {
      VISPEC_CHECK(kv.first.IsScalar(), "--set: a key that is a list or a map, not a field name");
      out[kv.first.Scalar()] = unmarked(kv.second);
    }
    return out;
  }
  return YAML::Node();
}
}  // namespace

void apply_override(YAML::Node& root, const std::string& assignment) {
  const auto eq = assignment.find('=');
  VISPEC_CHECK(eq != std::string::npos && eq > 0, "--set ", assignment, ": expected key.path=value");
  const std::string path = assignment.substr(0, eq), value = assignment.substr(eq + 1);
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    parts.push_back(path.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  YAML::Node parsed;
  try {
    parsed = YAML::Load(value);
  } catch (const YAML::Exception& e) {
    VISPEC_FAIL("--set ", assignment, ": invalid value: ", e.msg);
  }
  // yaml-cpp nodes are handles: walk with reset() copies so that assignment writes into the tree.
  std::vector<YAML::Node> chain{root};
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node next = chain.back()[parts[i]];
    if (!next.IsMap()) {
      VISPEC_CHECK(!next.IsDefined() || next.IsNull(), "--set ", assignment, ": '", parts[i], "' is not a map");
      chain.back()[parts[i]] = YAML::Node(YAML::NodeType::Map);
      next = chain.back()[parts[i]];
    }
    chain.push_back(next);
  }
  chain.back()[parts.back()] = unmarked(parsed);
}

}  // namespace vispec
