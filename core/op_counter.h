// Counts what a piece of code asks of LibTorch on this thread, through the hook LibTorch's profiler uses
// (RecordFunction callbacks): top-level operator calls, ATen's and the fused vispec:: ones (the ops a decoder
// issues, not the ones they call inside), host reads (item(), which shows up as aten::_local_scalar_dense, and
// decoding's read_to_host()) and conversions: the dtype casts and device copies the code asks for (a top-level aten::to
// that copies), each a kernel of its own. (Arithmetic with a Python-style scalar converts that 0-dim scalar inside the
// op, on the host: not counted.) On a GPU each top-level op is at least one kernel launch and each host read a
// synchronisation. Used by the op-count tests and by `vispec bench` (on an untimed chunk: the hook costs time on every
// op).
#pragma once

#include <ATen/record_function.h>

#include <cstdint>
#include <cstring>
#include <memory>

namespace vispec {

class OpCounter {
 public:
  OpCounter() {
    counts() = {};
    handle_ = at::addThreadLocalCallback(at::RecordFunctionCallback(&OpCounter::enter, &OpCounter::leave)
                                             .scopes({at::RecordScope::FUNCTION, at::RecordScope::USER_SCOPE}));
  }
  ~OpCounter() { at::removeCallback(handle_); }
  OpCounter(const OpCounter&) = delete;
  OpCounter& operator=(const OpCounter&) = delete;

  int64_t ops() const { return counts().ops; }
  int64_t host_reads() const { return counts().reads; }
  int64_t conversions() const { return counts().conversions; }

 private:
  struct Counts {
    int64_t ops = 0, reads = 0, conversions = 0, depth = 0;
    bool top_is_to = false;  // the current top-level operator is aten::to
  };
  static Counts& counts() {
    static thread_local Counts c;
    return c;
  }
  // The markers of a static step (models/gpt/step_graph.h), of a decoder's iteration (decoding/floor/decode_rows.h) and
  // of the cache's length upload wrap operators without hiding them: they neither count nor deepen; their
  // context tells leave() so.
  struct Transparent : at::ObserverContext {};
  static std::unique_ptr<at::ObserverContext> enter(const at::RecordFunction& fn) {
    auto& c = counts();
    const char* name = fn.name();
    for (const char* marker :
         {"vispec::static_step", "vispec::iteration_graph", "vispec::iteration", "vispec::host_upload"})
      if (std::strcmp(name, marker) == 0) return std::make_unique<Transparent>();
    if (std::strcmp(name, "aten::_local_scalar_dense") == 0 || std::strcmp(name, "vispec::host_read") == 0) ++c.reads;
    if (c.depth == 0) c.top_is_to = std::strcmp(name, "aten::to") == 0;
    if (std::strcmp(name, "aten::_to_copy") == 0 && (c.depth == 0 || (c.depth == 1 && c.top_is_to))) ++c.conversions;
    // Top-level operators: ATen's and our fused ones (kernels/fused_ops.h), each counted once.
    if (c.depth++ == 0 && (std::strncmp(name, "aten::", 6) == 0 ||
                           (std::strncmp(name, "vispec::", 8) == 0 && std::strcmp(name, "vispec::host_read") != 0)))
      ++c.ops;
    return nullptr;
  }
  static void leave(const at::RecordFunction&, at::ObserverContext* context) {
    if (!context) --counts().depth;
  }

  at::CallbackHandle handle_;
};

}  // namespace vispec
