// A guard that sets one of this thread's bool switches while alive and then puts back what it was (nested
// guards restore in order). The switches that send this thread's work down another path are made with it.
#pragma once

namespace vispec {

class ScopedFlag {
 public:
  explicit ScopedFlag(bool& flag) : flag_(flag), before_(flag) { flag_ = true; }
  ~ScopedFlag() { flag_ = before_; }
  ScopedFlag(const ScopedFlag&) = delete;
  ScopedFlag& operator=(const ScopedFlag&) = delete;

 private:
  bool& flag_;
  bool before_;
};

}  // namespace vispec
