#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/check.h"

namespace vispec {

MappedFile::MappedFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  VISPEC_CHECK(fd >= 0, path, ": cannot open: ", std::strerror(errno));
  struct stat st {};
  ::fstat(fd, &st);
  size_ = uint64_t(st.st_size);
  void* data = nullptr;
  if (size_ > 0) data = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);  // the mapping stays valid without the descriptor
  VISPEC_CHECK(data != MAP_FAILED, path, ": mmap failed: ", std::strerror(err));
  const uint64_t n = size_;
  mapping_ = std::shared_ptr<void>(data, [n](void* p) {
    if (p) ::munmap(p, n);
  });
}

}  // namespace vispec
