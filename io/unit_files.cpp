#include "io/unit_files.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "core/check.h"

namespace vispec {

nlohmann::json unit_files_to_json(const std::vector<UnitFile>& files) {
  auto list = nlohmann::json::array();
  for (const auto& f : files) list.push_back({f.name, f.digest.bytes, crc32_hex(f.digest.crc32)});
  return list;
}

std::vector<UnitFile> unit_files_from_json(const nlohmann::json& j, const std::string& where) {
  VISPEC_CHECK(j.is_array(), where, ": files: not a list");
  std::vector<UnitFile> files;
  files.reserve(j.size());
  for (const auto& e : j) {
    VISPEC_CHECK(e.is_array() && e.size() == 3 && e[0].is_string() && e[1].is_number_integer() && e[2].is_string(),
                 where, ": files: an entry is not [path, bytes, crc32]");
    UnitFile f;
    f.name = e[0].get<std::string>();
    // A path that leaves OUT would let an edited journal make verify --repair touch other files.
    VISPEC_CHECK(!f.name.empty() && f.name[0] != '/' && f.name.find("..") == std::string::npos, where, ": files: '",
                 f.name, "' is not a path inside the output directory");
    f.digest.bytes = e[1].get<int64_t>();
    VISPEC_CHECK(parse_crc32_hex(e[2].get<std::string>(), f.digest.crc32), where, ": files: '", e[2].get<std::string>(),
                 "' is not a CRC-32 (8 hex digits)");
    files.push_back(std::move(f));
  }
  return files;
}

std::string check_unit_file(const std::string& out, const UnitFile& file, bool checksum) {
  const std::string path = out + "/" + file.name;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return path + (errno == ENOENT ? ": missing" : std::string(": cannot stat: ") + std::strerror(errno));
  if (int64_t(st.st_size) != file.digest.bytes)
    return path + ": " + std::to_string(st.st_size) + " bytes, journaled " + std::to_string(file.digest.bytes);
  if (!checksum) return "";
  const auto actual = digest_file(path);  // a read that fails throws: unreadable is not damaged
  if (actual.crc32 != file.digest.crc32)
    return path + ": CRC-32 " + crc32_hex(actual.crc32) + ", journaled " + crc32_hex(file.digest.crc32);
  return "";
}

}  // namespace vispec
