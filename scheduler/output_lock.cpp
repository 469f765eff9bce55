#include "scheduler/output_lock.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/check.h"
#include "core/logging.h"
#include "io/atomic_file.h"

namespace vispec {

namespace {
std::string read_holder(int fd) {
  std::string text(512, '\0');
  const ssize_t n = ::pread(fd, text.data(), text.size(), 0);
  text.resize(n > 0 ? size_t(n) : 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
  return text.empty() ? "holder unknown" : text;
}
}  // namespace

OutputLock::OutputLock(const std::string& out_dir, Mode mode) {
  if (mode == Mode::kReader) {
    const std::string path = out_dir + "/.vispec.lock";
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      VISPEC_CHECK(errno == ENOENT, path, ": cannot open the output directory's lock: ", std::strerror(errno));
      return;  // no run has locked this copy of a run directory
    }
    if (::flock(fd_, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
      const std::string holder = read_holder(fd_);
      ::close(fd_);
      fd_ = -1;
      VISPEC_FAIL(out_dir, ": a vispec run is writing it (", holder, "); read it when that run has ended");
    }
    return;  // (a file system without flock: as for a writer, nothing to hold)
  }
  make_directories(out_dir);
  const std::string path = out_dir + "/.vispec.lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  VISPEC_CHECK(fd_ >= 0, path, ": cannot open the output directory's lock: ", std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err == EWOULDBLOCK) {
      const std::string holder = read_holder(fd_);
      ::close(fd_);
      fd_ = -1;
      VISPEC_FAIL(out_dir, ": in use by another vispec run (", holder,
                  "); wait for it or stop it, or choose another --out");
    }
    spdlog::warn(
        "{}: cannot lock ({}): this file system does not support flock, so nothing stops a second run "
        "into this directory",
        path, std::strerror(err));
    return;
  }
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  const std::string me =
      std::string("host ") + host + ", pid " + std::to_string(::getpid()) + ", started " + utc_timestamp() + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) != ssize_t(me.size()))
    spdlog::warn("{}: could not record this run as the holder: {}", path, std::strerror(errno));
}

OutputLock::~OutputLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace vispec
