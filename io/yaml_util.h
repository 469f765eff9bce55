// YAML access that turns every problem into one line naming the file, the line and the field:
//   jobs/demo.yaml:7: decoder.top_k: expected an integer, got 'ten'
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace vispec {

YAML::Node load_yaml_file(const std::string& path);

class YamlView {
 public:
  YamlView(YAML::Node node, std::string file, std::string path = "");

  bool has(const std::string& key) const;
  // An optional section (a map of fields): whether it is there. A key written with nothing after it ("distill:")
  // is refused in one line rather than read as absent, which would silently drop what its author asked for.
  bool has_section(const std::string& key) const;
  YamlView at(const std::string& key) const;  // required field
  std::vector<std::string> keys() const;
  template <class T>
  T as() const;  // this node's value, typed
  template <class T>
  T get(const std::string& key, const T& fallback) const {
    return has(key) ? at(key).as<T>() : fallback;
  }
  template <class T>
  T need(const std::string& key) const {
    return at(key).as<T>();
  }
  // A path field, resolved against the YAML file's directory (absolute paths are kept as they are).
  std::string need_path(const std::string& key) const;

  // "file:line: path: message" as a vispec::Error.
  [[noreturn]] void fail(const std::string& message) const;
  // Fails naming the first key of this map that is not in `known` (catches typos like "temprature"), and fails
  // where this section is a list or a value, not a map (read as a map it would look empty: its fields ignored).
  void reject_unknown_keys(const std::vector<std::string>& known) const;

  const YAML::Node& node() const { return node_; }
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  std::string where() const;  // "file:line: path"

 private:
  std::string key_name(const YAML::Node& key) const;  // a map key as a field name; fails on a list or map key
  YAML::Node node_;
  std::string file_, path_;
};

// Applies "a.b.c=value" (value parsed as YAML) to a document, creating maps as needed.
void apply_override(YAML::Node& root, const std::string& assignment);

}  // namespace vispec
