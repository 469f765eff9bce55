// References made by a Python script of tests/ with the project's virtual environment (transformers, tokenizers,
// tiktoken): made once per version of the script (its contents' hash) in TEMP/vispec_<name>_<hash>/ and shared
// by the test processes (CTest runs each test alone). A process makes them in a directory of its own, then
// renames it into place; if another process got there first, its directory is used.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace vispec::test {

struct PythonReference {
  std::filesystem::path dir;  // where the script ran (its outputs, and make.log)
  bool made = false;          // false: the script failed; make.log says why
  std::string missing;        // non-empty: the environment lacks `module` (the tests skip, saying this)
};

// Runs tests/SCRIPT.py (unless its outputs exist) after checking that `module` imports; `imports`: the other
// scripts of tests/ it imports (part of its version).
inline PythonReference python_reference(const std::string& script, const std::string& module,
                                        const std::vector<std::string>& imports = {}) {
  namespace fs = std::filesystem;
  PythonReference r;
  const std::string path = std::string(VISPEC_SOURCE_DIR) + "/tests/" + script + ".py";
  std::ostringstream text;
  text << std::ifstream(path).rdbuf();
  for (const auto& other : imports)
    text << std::ifstream(std::string(VISPEC_SOURCE_DIR) + "/tests/" + other + ".py").rdbuf();
  r.dir = fs::temp_directory_path() / ("vispec_" + script + "_" + std::to_string(std::hash<std::string>{}(text.str())));
  r.made = fs::exists(r.dir / "done");
  if (r.made) return r;  // (made by another test process: no Python to start, not even for the probe below)
  const std::string probe = std::string(VISPEC_TORCH_PYTHON) + " -c 'import " + module + "' > /dev/null 2>&1";
  if (std::system(probe.c_str()) != 0) {
    r.missing = std::string(VISPEC_TORCH_PYTHON) + " lacks " + module + " (scripts/setup.sh)";
    return r;
  }
  const auto mine = fs::path(r.dir.string() + "." + std::to_string(::getpid()));
  fs::remove_all(mine);
  fs::create_directories(mine);
  const std::string cmd = "cd " + mine.string() + " && " + VISPEC_TORCH_PYTHON + " " + path + " > make.log 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    r.dir = mine;
    return r;
  }
  std::ofstream(mine / "done") << "ok\n";
  std::error_code taken;
  fs::rename(mine, r.dir, taken);
  if (taken) fs::remove_all(mine);
  r.made = true;
  return r;
}

}  // namespace vispec::test
