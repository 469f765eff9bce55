#include "io/digest_cache.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/check.h"

namespace vispec {

namespace {
nlohmann::json file_key(const std::string& path) {
  struct stat st {};
  VISPEC_CHECK(::stat(path.c_str(), &st) == 0, path, ": cannot read: ", std::strerror(errno));
  return {{"path", std::filesystem::absolute(path).lexically_normal().string()},
          {"bytes", int64_t(st.st_size)},
          {"mtime_ns", int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec},
          {"inode", uint64_t(st.st_ino)}};
}
}  // namespace

std::string digest_cache_path() {
  const char* own = std::getenv("VISPEC_CACHE_DIR");
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::string dir = own && *own   ? own
                          : xdg && *xdg ? std::string(xdg) + "/vispec"
                                        : std::string(home && *home ? home : "/tmp") + "/.cache/vispec";
  return dir + "/file-digests.jsonl";
}

FileDigest cached_file_digest(const std::string& path) {
  const auto key = file_key(path);
  const auto cache = digest_cache_path();
  {
    std::ifstream in(cache);
    std::string line;
    FileDigest found;
    bool hit = false;
    while (std::getline(in, line)) {  // the last matching line wins; a damaged line is ignored
      const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (!j.is_object() || !j.contains("key") || j["key"] != key || !j.contains("crc32") || !j["crc32"].is_string())
        continue;
      hit = parse_crc32_hex(j["crc32"].get<std::string>(), found.crc32);
      found.bytes = key["bytes"].get<int64_t>();
    }
    if (hit && !in.bad()) return found;  // (a cache that cannot be read whole costs a digest, never a wrong one)
  }
  const auto digest = digest_file(path);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(cache).parent_path(), ec);
  const std::string line = nlohmann::json{{"key", key}, {"crc32", crc32_hex(digest.crc32)}}.dump() + "\n";
  const int fd = ::open(cache.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0 || ::write(fd, line.data(), line.size()) != ssize_t(line.size()))
    spdlog::debug("{}: cannot remember the digest of {} ({}); it is recomputed next time", cache, path,
                  std::strerror(errno));
  if (fd >= 0) ::close(fd);
  return digest;
}

}  // namespace vispec
