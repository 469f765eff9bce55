// A file mapped read-only (mmap): weights are read in place, never copied whole into memory first. Views into
// it stay valid while any copy of the MappedFile lives.
//
// A read through a mapping cannot return an error: when the disk fails (EIO) or the file is truncated while
// mapped, the kernel raises SIGBUS at the instruction that touched the page. So every live mapping is
// registered with a SIGBUS handler that, for a fault inside one, prints one line naming the file and the
// offset and exits with kExitUserError, the code of any other unreadable input. Nothing is left half-written:
// vispec writes its outputs atomically and its journal line by line. A SIGBUS anywhere else is left to the
// handler that was there before (the default: a core dump).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace vispec {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws one line naming the file
  const uint8_t* data() const { return static_cast<const uint8_t*>(mapping_.get()); }
  uint64_t size() const { return size_; }
  const std::shared_ptr<void>& owner() const { return mapping_; }  // keeps the mapping alive

 private:
  std::shared_ptr<void> mapping_;
  uint64_t size_ = 0;
};

}  // namespace vispec
