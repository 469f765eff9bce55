#include "models/checkpoints/node_weights.h"

#include <atomic>

namespace vispec {

namespace {
thread_local NodeWeights* g_scope = nullptr;
std::atomic<int64_t> g_read_bytes{0}, g_received_bytes{0};
}  // namespace

ShareWeightsOnNode::ShareWeightsOnNode(NodeWeights* node) : previous_(g_scope) { g_scope = node; }
ShareWeightsOnNode::~ShareWeightsOnNode() { g_scope = previous_; }

NodeWeights* node_weights_in_scope() { return g_scope; }

WeightTraffic weight_traffic() { return {g_read_bytes.load(), g_received_bytes.load()}; }

void count_weight_traffic(int64_t read_bytes, int64_t received_bytes) {
  g_read_bytes += read_bytes;
  g_received_bytes += received_bytes;
}

}  // namespace vispec
