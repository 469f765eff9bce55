// A file mapped read-only (mmap): weights are read in place, never copied whole into memory first. Views into
// it stay valid while any copy of the MappedFile lives.
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
