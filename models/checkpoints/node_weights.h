// Weights read once per node. Eight ranks on a node that each read a 7B checkpoint from a shared filesystem
// ask it for eight times the bytes; instead, while a ShareWeightsOnNode is alive on a thread, load_weights
// (models/checkpoints/load.h) reads the files on the node's first process only and hands every parameter and buffer it
// filled to the node's other processes, which read nothing. The transport (MPI within the node) lives above
// models/, behind NodeWeights.
//
// The scope is a collective: every process of the node must then make the same load_weights calls, on
// modules of the same architecture, in the same order; and a failure inside it must end every process of
// the job (fail_all_ranks), since the others would otherwise wait for tensors that never come.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace vispec {

class NodeWeights {
 public:
  virtual ~NodeWeights() = default;
  virtual bool reads_files() const = 0;  // this process is the node's reader
  virtual int processes() const = 0;     // on this node, the reader included
  // The reader's `tensor` into every other process's tensor of the same shape and dtype (any device).
  virtual void share(torch::Tensor& tensor) = 0;
};

// Installs `node` for load_weights on this thread until destroyed (scopes nest: the innermost wins).
class ShareWeightsOnNode {
 public:
  explicit ShareWeightsOnNode(NodeWeights* node);
  ~ShareWeightsOnNode();
  ShareWeightsOnNode(const ShareWeightsOnNode&) = delete;
  ShareWeightsOnNode& operator=(const ShareWeightsOnNode&) = delete;

 private:
  NodeWeights* previous_;
};

NodeWeights* node_weights_in_scope();  // nullptr outside any scope

// What this process's load_weights calls moved, for the log and the tests: bytes copied out of weight files,
// and bytes received from the node's reader instead.
struct WeightTraffic {
  int64_t read_bytes = 0;
  int64_t received_bytes = 0;
};
WeightTraffic weight_traffic();
void count_weight_traffic(int64_t read_bytes, int64_t received_bytes);  // load_weights' tally

}  // namespace vispec
