// Counts what a piece of code asks of LibTorch on this thread, through the hook LibTorch's profiler uses
// (RecordFunction callbacks): top-level operator calls, ATen's and the fused vispec:: ones (the ops a decoder
// issues, not the ones they call inside), host reads (item(), which shows up as aten::_local_scalar_dense, and
// decoding's read_to_host()) and conversions: the dtype casts and device copies the code asks for (a top-level aten::to
// that copies), each a kernel of its own. (Arithmetic with a Python-style scalar converts that 0-dim scalar inside the
// op, on the host: not counted.) On a GPU each top-level op is at least one kernel launch and each host read a
// synchronisation. Used by the op-count tests and by `vispec bench` (on an untimed chunk: the hook costs time on every
// op).
//
// It also counts, inside decoder iterations (decoding/common/decode_state.h) and outside their forwards (static steps,
// models/gpt/step_graph.h), the top-level operators that launch a kernel on a GPU: an operator launches one when it,
// or an operator it calls, is not metadata-only. Metadata-only are views (view, reshape that views, narrow,
// select, expand, unsqueeze, permute, ...), no-op casts (aten::to and contiguous that copy nothing: a copy shows up
// as their _to_copy or clone), allocations that write nothing (empty), and host reads (counted apart). This is the
// "besides its forwards" count of an iteration's ceiling (tests/test_decode_op_counts.cpp).
#pragma once

#include <ATen/record_function.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

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
  // Decoder iterations begun, and the kernel-launching operators inside them besides their forwards (above).
  int64_t iterations() const { return counts().iterations; }
  int64_t iteration_kernel_ops() const { return counts().iteration_kernel_ops; }
  // Those operators by name, the most frequent first: what an iteration's count is made of (the op-count test
  // and `vispec step-cost --decoders` print the head of it).
  std::vector<std::pair<std::string, int64_t>> iteration_kernel_ops_by_name() const {
    std::vector<std::pair<std::string, int64_t>> named(counts().by_name.begin(), counts().by_name.end());
    std::stable_sort(named.begin(), named.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    return named;
  }

 private:
  struct Counts {
    int64_t ops = 0, reads = 0, conversions = 0, depth = 0;
    int64_t iterations = 0, iteration_kernel_ops = 0;
    int64_t in_iteration = 0, in_step = 0;   // open iteration and static-step markers
    bool top_is_to = false;                  // the current top-level operator is aten::to
    bool top_launches = false;               // it, or an operator it called so far, launches a kernel
    bool top_is_read = false;                // it is a host read
    const char* top_name = nullptr;          // its name (the operator schema's, alive as long as the program)
    std::map<std::string, int64_t> by_name;  // iteration_kernel_ops by top-level operator
  };
  static Counts& counts() {
    static thread_local Counts c;
    return c;
  }
  // The markers of a static step (models/gpt/step_graph.h), of a decoder's iteration (decoding/common/decode_state.h)
  // and of the cache's length upload wrap operators without hiding them: they neither count nor deepen; their context
  // tells leave() so.
  struct Transparent : at::ObserverContext {
    int64_t Counts::*open = nullptr;  // the marker count it keeps open, if any
  };
  static bool metadata_only(const char* name) {
    static const char* const kNames[] = {"aten::view",         "aten::_unsafe_view",
                                         "aten::reshape",      "aten::_reshape_alias",
                                         "aten::expand",       "aten::expand_as",
                                         "aten::narrow",       "aten::select",
                                         "aten::slice",        "aten::unsqueeze",
                                         "aten::squeeze",      "aten::permute",
                                         "aten::transpose",    "aten::t",
                                         "aten::as_strided",   "aten::alias",
                                         "aten::detach",       "aten::view_as",
                                         "aten::unflatten",    "aten::flatten",
                                         "aten::split",        "aten::split_with_sizes",
                                         "aten::chunk",        "aten::unbind",
                                         "aten::diagonal",     "aten::movedim",
                                         "aten::swapaxes",     "aten::unfold",
                                         "aten::broadcast_to", "aten::to",
                                         "aten::contiguous",   "aten::empty",
                                         "aten::empty_like",   "aten::empty_strided",
                                         "aten::lift_fresh",   "aten::resolve_conj",
                                         "aten::resolve_neg",  "aten::result_type",
                                         "aten::is_nonzero",   "aten::numpy_T",
                                         "aten::mT",           "aten::matrix_H",
                                         "aten::view_as_real"};
    for (const char* n : kNames)
      if (std::strcmp(name, n) == 0) return true;
    return false;
  }
  static std::unique_ptr<at::ObserverContext> enter(const at::RecordFunction& fn) {
    auto& c = counts();
    const char* name = fn.name();
    const auto marker = [](int64_t Counts::*open) {
      auto t = std::make_unique<Transparent>();
      t->open = open;
      if (open) ++(counts().*open);
      return t;
    };
    if (std::strcmp(name, "vispec::iteration") == 0) {
      ++c.iterations;
      return marker(&Counts::in_iteration);
    }
    if (std::strcmp(name, "vispec::static_step") == 0) return marker(&Counts::in_step);
    if (std::strcmp(name, "vispec::iteration_graph") == 0 || std::strcmp(name, "vispec::host_upload") == 0)
      return marker(nullptr);
    const bool read =
        std::strcmp(name, "aten::_local_scalar_dense") == 0 || std::strcmp(name, "vispec::host_read") == 0;
    if (read) ++c.reads;
    if (c.depth == 0) {
      c.top_is_to = std::strcmp(name, "aten::to") == 0;
      c.top_is_read = read || std::strcmp(name, "aten::item") == 0;
      c.top_launches = false;
      c.top_name = name;
    }
    if (!metadata_only(name)) c.top_launches = true;
    if (std::strcmp(name, "aten::_to_copy") == 0 && (c.depth == 0 || (c.depth == 1 && c.top_is_to))) ++c.conversions;
    // Top-level operators: ATen's and our fused ones (kernels/README.md), each counted once.
    if (c.depth++ == 0 && (std::strncmp(name, "aten::", 6) == 0 ||
                           (std::strncmp(name, "vispec::", 8) == 0 && std::strcmp(name, "vispec::host_read") != 0)))
      ++c.ops;
    return nullptr;
  }
  static void leave(const at::RecordFunction&, at::ObserverContext* context) {
    auto& c = counts();
    if (context) {
      const auto open = static_cast<Transparent*>(context)->open;
      if (open) --(c.*open);
      return;
    }
    if (--c.depth == 0 && c.top_launches && !c.top_is_read && c.in_iteration > 0 && c.in_step == 0) {
      ++c.iteration_kernel_ops;
      ++c.by_name[c.top_name];
    }
  }

  at::CallbackHandle handle_;
};

}  // namespace vispec
