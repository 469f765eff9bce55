#include "io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/check.h"

namespace vispec {

namespace fs = std::filesystem;

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  tmp_ = path_ + ".tmp." + std::to_string(::getpid());
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  VISPEC_CHECK(fd_ >= 0, path_, ": cannot write: ", std::strerror(errno));
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

void AtomicFile::write(const void* data, size_t size) {
  digest_.update(data, size);
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd_, p, size);
    if (n < 0 && errno == EINTR) continue;
    VISPEC_CHECK(n > 0, path_, ": write failed: ", std::strerror(errno));
    p += n;
    size -= size_t(n);
  }
}

FileDigest AtomicFile::commit(bool sync_directory) {
  VISPEC_CHECK(::fsync(fd_) == 0, path_, ": fsync failed: ", std::strerror(errno));
  const int closed = ::close(fd_);  // (a network file system may report a failed write only here)
  const int close_error = errno;
  fd_ = -1;
  if (closed != 0) {
    ::unlink(tmp_.c_str());
    VISPEC_FAIL(path_, ": close failed: ", std::strerror(close_error));
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    VISPEC_FAIL(path_, ": rename failed: ", std::strerror(err));
  }
  if (sync_directory) fsync_directory(fs::path(path_).parent_path().string());
  return digest_.digest();
}

FileDigest write_file_atomic(const std::string& path, const std::string& contents, bool sync_directory) {
  AtomicFile f(path);
  f.write(contents);
  return f.commit(sync_directory);
}

void append_file_synced(const std::string& path, const std::string& contents) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  VISPEC_CHECK(fd >= 0, path, ": cannot append: ", std::strerror(errno));
  const ssize_t n = ::write(fd, contents.data(), contents.size());
  const int err = errno;
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  VISPEC_CHECK(n == ssize_t(contents.size()) && synced, path, ": append failed: ", std::strerror(err));
}

void fsync_directory(const std::string& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

void make_directories(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  VISPEC_CHECK(!ec, dir, ": cannot create directory: ", ec.message());
}

std::string read_file(const std::string& path) {
  // Every read checked (io/file_digest.h's read_chunks): a failed read is an error naming the file, never a
  // shorter file.
  std::string s;
  read_chunks(path, [&](const char* data, size_t size) { s.append(data, size); });
  return s;
}

bool file_exists(const std::string& path) {
  // The non-throwing form: a name too long, a directory without search permission... are errors naming the
  // path, never "absent" and never an uncaught filesystem_error.
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  VISPEC_CHECK(!ec, path, ": cannot check whether it exists: ", ec.message());
  return exists;
}

}  // namespace vispec
