#include "models/gpt/step_graph.h"

#include <ATen/record_function.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <atomic>
#include <map>

#ifdef VISPEC_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>
#endif

#include "core/check.h"

namespace vispec {

namespace {
std::atomic<bool> graphs_switch{true};
// How deep this thread is inside steps of any owner: a step inside another runs eagerly (the outer one's
// graph, being captured, records it; a capture cannot hold another).
thread_local int step_depth = 0;
struct InsideStep {
  InsideStep() { ++step_depth; }
  ~InsideStep() { --step_depth; }
};

std::string key_text(const StepKey& key) {
  std::string s;
  for (const auto k : key) s += (s.empty() ? "" : ", ") + std::to_string(k);
  return s;
}

std::vector<at::Tensor> clones_of(const std::vector<const at::Tensor*>& tensors) {
  std::vector<at::Tensor> out;
  for (const auto* t : tensors) out.push_back(t->defined() ? t->clone() : at::Tensor());
  return out;
}

const void* address_of(const at::Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

#ifdef VISPEC_CUDA
// "" when every tensor equals its reference bit for bit, else what differs first.
std::string first_difference(const std::vector<const at::Tensor*>& tensors, const std::vector<at::Tensor>& reference,
                             const char* what) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = *tensors[i];
    if (!t.defined() || torch::equal(t, reference[i])) continue;
    const auto differing = t.ne(reference[i]).sum().item<int64_t>();
    std::string detail = fmt::format("{} {} differs in {} of {} values", what, i, differing, t.numel());
    if (t.is_floating_point())
      detail += fmt::format(" (largest difference {:.3g})",
                            (t.to(torch::kFloat64) - reference[i].to(torch::kFloat64)).abs().max().item<double>());
    return detail;
  }
  return "";
}
#endif
}  // namespace

void set_cuda_graphs(bool enabled) { graphs_switch = enabled; }
bool cuda_graphs_enabled() { return graphs_switch; }
bool inside_step() { return step_depth > 0; }

struct StepGraphs::Impl {
  c10::Device device;
  std::vector<const at::Tensor*> state, outputs;
  std::vector<const void*> addresses;  // each state tensor's storage when this owner was made
  bool enabled = false;
#ifdef VISPEC_CUDA
  std::map<StepKey, std::unique_ptr<at::cuda::CUDAGraph>> graphs;
  c10::MempoolId_t pool{0, 0};
#endif

  Impl(c10::Device d, std::vector<const at::Tensor*> s, std::vector<const at::Tensor*> o)
      : device(d), state(std::move(s)), outputs(std::move(o)) {
    for (const auto* t : state) addresses.push_back(address_of(*t));
#ifdef VISPEC_CUDA
    enabled = device.is_cuda() && cuda_graphs_enabled();
#endif
  }

  void check_addresses() const {
    for (size_t i = 0; i < state.size(); ++i)
      VISPEC_ASSERT(address_of(*state[i]) == addresses[i], "static step state ", i,
                    " moved: a step must write its buffers in place");
  }

  void restore(const std::vector<at::Tensor>& saved) const {
    for (size_t i = 0; i < state.size(); ++i)
      if (saved[i].defined()) state[i]->copy_(saved[i]);
  }

#ifdef VISPEC_CUDA
  // The first run of a key: eager reference, capture, one replay checked against the reference.
  void capture(const StepKey& key, const std::function<void()>& step) {
    const auto before = clones_of(state);
    step();  // the reference, on the current stream
    const auto eager_state = clones_of(state), eager_outputs = clones_of(outputs);
    const auto restart = [&] { restore(before); };
    std::string failure;
    try {
      restart();
      if (pool == c10::MempoolId_t{0, 0}) pool = at::cuda::graph_pool_handle();
      auto graph = std::make_unique<at::cuda::CUDAGraph>();
      auto side = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index());
      torch::cuda::synchronize(device.index());
      {
        c10::cuda::CUDAStreamGuard guard(side);
        step();  // warm-up on the capture stream: cuBLAS handles and workspaces, lazy initialisations
        restart();
        side.synchronize();
        // Thread-local: another thread's CUDA calls (a writer copying images to the host) neither break this
        // capture nor are refused while it runs.
        graph->capture_begin(pool, cudaStreamCaptureModeThreadLocal);
        try {
          step();
        } catch (...) {
          try {
            graph->capture_end();
          } catch (...) {
          }
          throw;
        }
        graph->capture_end();
      }
      torch::cuda::synchronize(device.index());
      restart();
      graph->replay();
      failure = first_difference(outputs, eager_outputs, "output");
      if (failure.empty()) failure = first_difference(state, eager_state, "state");
      if (failure.empty()) {
        graphs.emplace(key, std::move(graph));
        return;
      }
    } catch (const std::exception& e) {
      std::string what = e.what();
      failure = "capture failed: " + what.substr(0, what.find('\n'));
    }
    spdlog::warn(
        "cuda_graphs: decoding eagerly from here on: a graph of the step ({}) did not reproduce the eager "
        "step: {}",
        key_text(key), failure);
    enabled = false;
    graphs.clear();
    torch::cuda::synchronize(device.index());
    restart();
    step();  // the eager result again, keys and values included
  }
#endif
};

StepGraphs::StepGraphs(c10::Device device, std::vector<const at::Tensor*> state, std::vector<const at::Tensor*> outputs,
                       const char* record_name)
    : impl_(std::make_unique<Impl>(device, std::move(state), std::move(outputs))), record_name_(record_name) {}

StepGraphs::~StepGraphs() = default;

bool StepGraphs::replaying() const { return impl_->enabled; }

int64_t StepGraphs::graphs() const {
#ifdef VISPEC_CUDA
  return int64_t(impl_->graphs.size());
#else
  return 0;
#endif
}

void StepGraphs::run(const StepKey& key, const std::function<void()>& step) {
  // Marks the step, with its key, for traces (tests/test_static_step.cpp); the op counter sees through it.
  RECORD_FUNCTION(record_name_, std::vector<c10::IValue>(key.begin(), key.end()));
  impl_->check_addresses();
  if (step_depth > 0) {  // inside another owner's step: run eagerly, for its graph to record
    step();
    return;
  }
  const InsideStep inside;
#ifdef VISPEC_CUDA
  if (impl_->enabled) {
    const auto it = impl_->graphs.find(key);
    if (it != impl_->graphs.end()) {
      it->second->replay();
      return;
    }
    impl_->capture(key, step);
    return;
  }
#endif
  step();
}

}  // namespace vispec
