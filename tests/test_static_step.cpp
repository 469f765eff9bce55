// The static decode step (docs/decoding_common.md, "The static step") proven on the CPU: what a CUDA graph needs
// of a step, checked without a GPU.
//   - tokens: AR over static steps (device lengths, a length bucket, device counters) picks the tokens the
//     dynamic cache's AR loop picks (written out below as it was before the static step), at T = 0 and 1;
//   - trace: the ATen operators of consecutive steps, with their input shapes and scalar arguments, are the same
//     within a length bucket (nothing from the host leaks into a step), change only where the bucket does, and
//     no step reads the host;
//   - storage: a step that rebinds a state tensor instead of writing it in place is refused;
//   - a static block of several entries (a chain or tree) over ragged rows equals the dynamic cache's.
// And on a GPU (skipped visibly without one): graph replays pick the eager steps' tokens bit for bit.
#include <gtest/gtest.h>

#include <ATen/record_function.h>

#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "core/device.h"
#include "core/op_counter.h"
#include "core/rng.h"
#include "decoding/ar.h"
#include "exact_distribution.h"
#include "graphed_decoders.h"
#include "models/checkpoints/load.h"
#include "models/model_config.h"
#include "models/gpt/step_graph.h"
#include "tiny_models.h"

namespace vispec {

namespace {

// A tiny GPT on a 12x12 grid: 144 tokens, so its steps cross three length buckets (64, 128, 145 keys).
Gpt bucketed_gpt(uint64_t seed, torch::Dtype dtype = torch::kFloat32, torch::Device device = torch::kCPU) {
  return test::tiny_grid_gpt(seed, 12, dtype, device);
}

// AR as it was written before the static step: the dynamic cache (attention over exactly the committed keys,
// host-chosen write slots), host-chosen positions and uniform columns.
torch::Tensor dynamic_ar(const Gpt& gpt, const SamplingParams& params, const DecodeRequest& request) {
  torch::NoGradGuard no_grad;
  CfgModel target(gpt, params.cfg_scale);
  const int64_t B = request.batch(), N = gpt->config().image_tokens();
  const auto device = gpt->device();
  const auto u = uniform_table(request.seed, request.sample_ids, uint32_t(N), Purpose::kSample).to(device);
  auto tokens = torch::empty({B, N}, torch::TensorOptions().dtype(torch::kInt64).device(device));
  auto cache = target.make_cache(B);
  auto out = target.prefill(cache, request.conditions);
  cache.advance();
  for (int64_t i = 0; i < N; ++i) {
    auto next = sample_from_probs(target_probs(out.logits.select(1, out.logits.size(1) - 1), params), u.select(1, i));
    tokens.select(1, i).copy_(next);
    if (i + 1 == N) break;
    auto pos = torch::full({B, 1}, i, torch::TensorOptions().dtype(torch::kInt64).device(device));
    out = target.decode_block(cache, next.view({B, 1}), pos, torch::ones({1, 1}, torch::kBool));
    cache.advance();
  }
  return tokens.cpu();
}

// Every top-level ATen operator inside each static step, as "name(input, input, ...)" with tensors as their
// dtype and shape and scalars as their values; host reads as "HOST_READ". And the same inside each decoder
// iteration ("vispec::iteration"), where a static step is one entry "STEP(rows, width, bucket, )" and host
// reads and length uploads ("HOST_UPLOAD") are listed wherever they happen. A whole iteration run as one graph
// ("vispec::iteration_graph") is an entry "GRAPH(key)" before its operators, which are listed as the others;
// a host read or upload inside one is also counted in `reads_in_graphs`.
class StepTrace {
 public:
  StepTrace() {
    active() = this;
    handle_ = at::addThreadLocalCallback(at::RecordFunctionCallback(&StepTrace::enter, &StepTrace::leave)
                                             .needsInputs(true)
                                             .scopes({at::RecordScope::FUNCTION, at::RecordScope::USER_SCOPE}));
  }
  ~StepTrace() {
    at::removeCallback(handle_);
    active() = nullptr;
  }
  std::vector<std::vector<std::string>> steps, iterations;
  int64_t graphs = 0, reads_in_graphs = 0;

 private:
  struct StepMarker : at::ObserverContext {};
  struct IterationMarker : at::ObserverContext {};
  struct GraphMarker : at::ObserverContext {};
  static StepTrace*& active() {
    static thread_local StepTrace* a = nullptr;
    return a;
  }
  static std::string describe(const c10::IValue& v) {
    std::ostringstream s;
    if (v.isTensor()) {
      const auto& t = v.toTensor();
      if (t.defined()) s << t.scalar_type() << t.sizes() << (t.is_contiguous() ? "" : "nc");
      else s << "undef";
    } else if (v.isTensorList()) {
      s << "[";
      for (const auto& t : v.toTensorList()) s << describe(c10::IValue(at::Tensor(t))) << ",";
      s << "]";
    } else if (v.isList()) {  // e.g. index_put_'s optional tensors: their shapes, not their values
      s << "[";
      for (const auto& e : v.toListRef()) s << describe(e) << ",";
      s << "]";
    } else if (v.isNone()) {
      s << "None";
    } else {
      s << v;  // ints, doubles, bools, int lists, strings, scalars: their values
    }
    return s.str();
  }
  static std::string call(const at::RecordFunction& fn, const std::string& name) {
    std::string op = name + "(";
    for (const auto& input : fn.inputs()) op += describe(input) + ", ";
    return op + ")";
  }
  static std::unique_ptr<at::ObserverContext> enter(const at::RecordFunction& fn) {
    auto* self = active();
    const std::string name = fn.name();
    if (name == "vispec::iteration") {
      self->iterations.emplace_back();
      self->in_iteration_ = true;
      self->iteration_depth_ = 0;
      return std::make_unique<IterationMarker>();
    }
    if (name == "vispec::iteration_graph") {
      ++self->graphs;
      if (self->in_iteration_) self->iterations.back().push_back(call(fn, "GRAPH"));
      self->in_graph_ = true;
      return std::make_unique<GraphMarker>();
    }
    if (name == "vispec::static_step") {
      if (self->in_iteration_ && self->iteration_depth_++ == 0) self->iterations.back().push_back(call(fn, "STEP"));
      self->steps.emplace_back(1, call(fn, "STEP"));  // its key first
      self->in_step_ = true;
      self->depth_ = 0;
      return std::make_unique<StepMarker>();
    }
    for (const auto& [marker, entry] : {std::pair<std::string, std::string>{"aten::_local_scalar_dense", "HOST_READ"},
                                        {"vispec::host_read", "HOST_READ"},
                                        {"vispec::host_upload", "HOST_UPLOAD"}})
      if (name == marker) {
        if (self->in_graph_) ++self->reads_in_graphs;
        if (self->in_step_) self->steps.back().push_back(entry);
        if (self->in_iteration_) self->iterations.back().push_back(entry);
      }
    if (self->in_step_ && self->depth_++ == 0) self->steps.back().push_back(call(fn, name));
    if (self->in_iteration_ && self->iteration_depth_++ == 0) self->iterations.back().push_back(call(fn, name));
    return nullptr;
  }
  static void leave(const at::RecordFunction&, at::ObserverContext* context) {
    auto* self = active();
    if (dynamic_cast<IterationMarker*>(context)) {
      self->in_iteration_ = false;
      return;
    }
    if (dynamic_cast<GraphMarker*>(context)) {
      self->in_graph_ = false;
      return;
    }
    if (dynamic_cast<StepMarker*>(context)) self->in_step_ = false;
    else if (self->in_step_) --self->depth_;
    if (self->in_iteration_) --self->iteration_depth_;
  }
  at::CallbackHandle handle_;
  bool in_step_ = false, in_iteration_ = false, in_graph_ = false;
  int64_t depth_ = 0, iteration_depth_ = 0;
};

// The bucket the static step at image position i (feeding token i - 1) reads its keys through.
int64_t bucket_of(int64_t i, int64_t cls, int64_t capacity) {
  const int64_t need = cls + i;  // committed before the step (cls + i - 1) plus the step's entry
  return std::min(capacity, (need + KvCache::kLengthBucket - 1) / KvCache::kLengthBucket * KvCache::kLengthBucket);
}

}  // namespace

TEST(StaticStep, ArTokensEqualTheDynamicCacheAtBothTemperatures) {
  const auto gpt = bucketed_gpt(5);
  for (double temperature : {0.0, 1.0}) {
    const auto p = test::guided_sampling(temperature);
    const auto r = test::requests(0, 6);
    ArDecoder ar(gpt, p);
    const auto got = ar.decode(r).tokens;
    const auto want = dynamic_ar(gpt, p, r);
    EXPECT_TRUE(torch::equal(got, want)) << "T = " << temperature << ": " << got.ne(want).sum().item<int64_t>()
                                         << " of " << got.numel() << " tokens moved";
    // The decoder keeps its buffers between batches: a second batch of another size, then the first again.
    EXPECT_TRUE(torch::equal(ar.decode(test::requests(6, 3)).tokens, dynamic_ar(gpt, p, test::requests(6, 3))));
    EXPECT_TRUE(torch::equal(ar.decode(r).tokens, want));
  }
}

// The demo's tokens (jobs/demo.yaml: the embedded model, 40 samples, classes in order, CFG 2, seed 0, batches of
// 20) through five buckets, and greedy ones: byte for byte those of the dynamic cache.
TEST(StaticStep, DemoTokensEqualTheDynamicCache) {
  const auto model = load_model_config(std::string(VISPEC_SOURCE_DIR) + "/configs/fmnist.yaml");
  Gpt gpt(model.gpt, torch::TensorOptions(), /*random_init=*/false);
  load_weights(*gpt, model.gpt_weights);
  gpt->eval();
  for (double temperature : {1.0, 0.0}) {
    const auto p = test::guided_sampling(temperature);  // CFG 2, as the demo
    ArDecoder ar(gpt, p);
    for (int64_t first : {0, 20}) {
      DecodeRequest r;
      std::vector<int64_t> classes;
      for (int64_t i = first; i < first + 20; ++i) {
        classes.push_back(i / 4);
        r.sample_ids.push_back(uint64_t(i));
      }
      r.conditions.class_ids = torch::tensor(classes, torch::kInt64);
      const auto got = ar.decode(r).tokens, want = dynamic_ar(gpt, p, r);
      EXPECT_TRUE(torch::equal(got, want)) << "T = " << temperature << ", samples from " << first << ": "
                                           << got.ne(want).sum().item<int64_t>() << " tokens moved";
    }
  }
}

TEST(StaticStep, ConsecutiveStepsIssueTheSameOperatorsWithinABucket) {
  const auto gpt = bucketed_gpt(6);
  const auto& c = gpt->config();
  for (double temperature : {0.0, 1.0}) {
    ArDecoder ar(gpt, test::guided_sampling(temperature));
    const auto r = test::requests(0, 4);
    ar.decode(r);  // the session's buffers are made once
    StepTrace trace;
    ar.decode(r);
    const int64_t N = c.image_tokens(), capacity = c.max_seq_len();
    ASSERT_EQ(int64_t(trace.steps.size()), N - 1);
    std::set<int64_t> buckets;
    for (int64_t i = 1; i < N; ++i) {
      const auto& step = trace.steps[size_t(i - 1)];
      EXPECT_FALSE(step.empty());
      EXPECT_EQ(std::count(step.begin(), step.end(), "HOST_READ"), 0) << "step " << i << " reads the host";
      buckets.insert(bucket_of(i, c.cls_token_num, capacity));
      if (i == 1) continue;
      const auto& previous = trace.steps[size_t(i - 2)];
      if (bucket_of(i, c.cls_token_num, capacity) == bucket_of(i - 1, c.cls_token_num, capacity)) {
        const auto differ = std::mismatch(step.begin(), step.end(), previous.begin(), previous.end());
        ASSERT_EQ(step, previous) << "steps " << i - 1 << " and " << i << " differ within a bucket (T = " << temperature
                                  << "), first at operator " << (differ.first - step.begin()) << ": "
                                  << (differ.second != previous.end() ? *differ.second : "(end)") << " then "
                                  << (differ.first != step.end() ? *differ.first : "(end)");
      } else {
        EXPECT_NE(step, previous) << "a new bucket must change the keys' shape";
        EXPECT_EQ(step.size(), previous.size()) << "only shapes change between buckets";
      }
    }
    EXPECT_EQ(buckets.size(), 3u);  // 64, 128 and the capacity, 145
  }
}

// The speculative decoders' cached forwards (drafter steps, verify chains, windows, trees, rows) run as static
// steps over pooled caches (decoding/common/forward_graphs.h): a forward's operators depend only on its key (block
// shape and length bucket), never on a host value, and none reads the host. So over a whole decode, with many
// forwards, only a handful of distinct forward traces occur.
TEST(StaticStep, EveryDecodersCachedForwardsAreStaticSteps) {
  const test::GraphedDecoderModels models;
  const auto p = test::guided_sampling(1.0);
  for (const std::string name : {"sd", "sjd", "ssd", "eagle2", "eagle1", "mulo_sd", "zipar"}) {
    const auto decoder = test::graphed_decoder(name, models, p);
    const auto r = test::requests(0, 3);
    const auto first = decoder->decode(r).tokens;  // the pooled caches and their buffers are made once
    StepTrace trace;
    const auto again = decoder->decode(r).tokens;
    EXPECT_TRUE(torch::equal(first, again)) << name << ": a reused pooled cache changed the tokens";
    std::set<std::vector<std::string>> distinct;
    std::map<std::string, std::set<std::vector<std::string>>> by_key;  // by (rows, width, bucket)
    for (const auto& step : trace.steps) {
      EXPECT_EQ(std::count(step.begin(), step.end(), "HOST_READ"), 0) << name << ": a forward reads the host";
      distinct.insert(step);
      by_key[step.front()].insert(step);
    }
    std::cout << name << ": " << trace.steps.size() << " cached forwards, " << distinct.size() << " distinct, "
              << by_key.size() << " keys\n";
    EXPECT_GE(trace.steps.size(), name == "mulo_sd" ? 10u : 20u) << name;  // MuLo-SD's tiny pair: a 4x4 image
    // Forwards of one key differ only where blocks of one width are of different kinds: an EAGLE drafter's
    // catch-up of 4 pairs and its tree levels of 4 nodes after 4, 8 and 12 entries (4 block shapes); a model's
    // and its drafter's forwards (SD, MuLo-SD).
    for (const auto& [key, traces] : by_key)
      EXPECT_LE(traces.size(), 4u) << name << ": forwards of " << key << " differ by more than their block shape";
  }
}

// Whole iterations of the chain decoders (SD, SJD, SSD's ticks), of the tree decoders (EAGLE-2, LANTERN,
// ADT-Tree, EAGLE-1) and ZipAR's steps, with the exact rule and with Cool-SD's (whose weight table the rule keeps
// on the device): any two iterations whose static steps have the same keys (rows, width, bucket) issue the same
// operators with the same shapes and scalars. Nothing from the host leaks into an iteration: SJD's draw index
// is a device counter, the commits add the accepted counts to the caches' device lengths, EAGLE-2's trees are
// grown and laid out on the device, the EAGLE drafter's catch-up is one width and reads its pairs from the
// device. Each iteration reads the host once (the accepted counts or paths, which only the bookkeeping and
// the loop's end need) and uploads nothing but ZipAR's planned step and ADT-Tree's next shapes; a tree decoder
// runs one iteration per verification. Every decoder
// here runs its steady iterations (at least half of them) through one iteration
// graph, inside which nothing reads or uploads.
TEST(StaticStep, ConsecutiveIterationsIssueTheSameOperators) {
  const test::GraphedDecoderModels models;
  const auto keys = [](const std::vector<std::string>& iteration) {
    std::vector<std::string> k;
    for (const auto& op : iteration)
      if (op.rfind("STEP(", 0) == 0 || op.rfind("GRAPH(", 0) == 0) k.push_back(op);
    return k;
  };
  for (double temperature : {0.0, 1.0}) {
    const auto p = test::guided_sampling(temperature);
    for (const auto& name : test::kGraphedDecoders) {
      if (name == "mulo_sd")
        continue;  // verifies forward by forward (docs/decoding_common.md, "Not yet in decoding/common")
      const auto decoder = test::graphed_decoder(name, models, p);
      const auto r = test::requests(0, 3);
      decoder->decode(r);  // the pooled caches and their buffers are made once
      StepTrace trace;
      const auto out = decoder->decode(r);
      const auto& its = trace.iterations;
      ASSERT_GE(its.size(), 3u) << name;
      if (name.rfind("eagle", 0) == 0 || name == "lantern" || name.rfind("adt_tree", 0) == 0) {
        int64_t target_forwards = 0;
        for (const auto& s : out.stats) target_forwards = std::max(target_forwards, s.target_forwards);
        EXPECT_EQ(int64_t(its.size()), target_forwards - 1) << name << ": one iteration per verification";
      }
      // ZipAR's schedule does not depend on the tokens: it reads nothing, and uploads each step's planned inputs
      // (which cells, which entries each sees) before the step's graph; ADT-Tree uploads its rows' next tree shapes
      // and SSD its rows' ticks before each iteration's graph.
      const int64_t reads = name == "zipar" ? 0 : 1;
      const int64_t uploads = name == "zipar" || name == "ssd" || name.rfind("adt_tree", 0) == 0 ? 1 : 0;
      size_t compared = 0;
      std::map<std::vector<std::string>, size_t> last_of_key;  // each key's last iteration (SSD's ticks alternate keys)
      for (size_t i = 0; i < its.size(); ++i) {
        EXPECT_EQ(std::count(its[i].begin(), its[i].end(), "HOST_READ"), reads) << name << " iteration " << i;
        EXPECT_EQ(std::count(its[i].begin(), its[i].end(), "HOST_UPLOAD"), uploads) << name << " iteration " << i;
        EXPECT_FALSE(keys(its[i]).empty()) << name << ": an iteration without a static step";
        const auto seen = last_of_key.find(keys(its[i]));
        const size_t before = seen == last_of_key.end() ? i : seen->second;
        last_of_key[keys(its[i])] = i;
        if (before == i) continue;
        ++compared;
        const auto& earlier = its[before];
        const auto differ = std::mismatch(its[i].begin(), its[i].end(), earlier.begin(), earlier.end());
        ASSERT_EQ(its[i], earlier) << name << " (T = " << temperature << "): iterations " << before << " and " << i
                                   << " differ at operator " << (differ.first - its[i].begin()) << ": "
                                   << (differ.second != earlier.end() ? *differ.second : "(end)") << " then "
                                   << (differ.first != its[i].end() ? *differ.first : "(end)");
      }
      std::cout << name << " (T = " << temperature << "): " << its.size() << " iterations of " << its[0].size()
                << " operators, " << compared << " compared with the last of their key, " << trace.graphs
                << " run as one graph\n";
      EXPECT_EQ(trace.reads_in_graphs, 0) << name << ": an iteration graph reads or uploads to the host";
      EXPECT_GE(trace.graphs, int64_t(its.size()) / 2) << name << ": too few steady iterations";
      EXPECT_GE(compared, its.size() / 2) << name << ": too few iterations share their keys";
    }
  }
}

TEST(StaticStep, AStepThatMovesItsStateIsRefused) {
  auto a = torch::zeros({4}), b = torch::zeros({4});
  StepGraphs graphs(torch::kCPU, {&a, &b}, {&a});
  graphs.run({1, 1, 64}, [&] { a.add_(1); });
  EXPECT_EQ(a[0].item<float>(), 1.0f);
  EXPECT_FALSE(graphs.replaying());            // a CPU never replays
  graphs.run({1, 1, 64}, [&] { b = b + 1; });  // rebinds b: a graph would keep writing the old storage
  EXPECT_THROW(graphs.run({1, 1, 64}, [&] {}), std::exception);
}

namespace {
// A cache of `gpt` (dynamic, or static with device lengths) holding two rows' prefills and a first block of 3
// entries, of which rows keep 3 and 1: ragged rows with 4 and 2 committed entries (host counts, which the static
// cache uploads: its host plan exact).
KvCache ragged_cache(Gpt gpt, const torch::Tensor& cond, bool static_block, int64_t extra) {
  auto cache = gpt->make_cache(2, extra, static_block);
  gpt->prefill(cache, cond);
  cache.advance();
  const auto i64 = [](std::vector<int64_t> v) { return torch::tensor(v, torch::kInt64).view({2, 3}); };
  gpt->decode_block(cache, i64({3, 4, 5, 6, 7, 8}), i64({0, 1, 2, 0, 1, 2}), torch::Tensor());
  cache.advance(std::vector<int64_t>{3, 1});
  return cache;
}
}  // namespace

TEST(StaticStep, AStaticBlockOverRaggedRowsEqualsTheDynamicCache) {
  // Two rows of different committed lengths, then a 3-entry block under a tree mask, through both caches.
  auto gpt = bucketed_gpt(7);
  torch::NoGradGuard no_grad;
  const auto cond = gpt->embed_classes(torch::tensor({0, 2}, torch::kInt64));
  const auto tree = torch::tensor({1, 0, 0, 1, 1, 0, 1, 0, 1}, torch::kBool).view({3, 3});
  std::vector<GptOutput> outs;
  for (bool static_block : {false, true}) {
    auto cache = ragged_cache(gpt, cond, static_block, 3);
    const auto i64 = [](std::vector<int64_t> v) { return torch::tensor(v, torch::kInt64).view({2, 3}); };
    outs.push_back(gpt->decode_block(cache, i64({9, 10, 11, 12, 13, 14}), i64({3, 4, 4, 1, 2, 2}), tree));
    if (static_block) EXPECT_EQ(cache.bucket(), KvCache::kLengthBucket);
  }
  EXPECT_TRUE(torch::allclose(outs[0].logits, outs[1].logits, 1e-5, 1e-5))
      << (outs[0].logits - outs[1].logits).abs().max().item<double>();
}

// A draft tree grown level by level (EAGLE's drafters): a second block extends the pending one, its queries
// seeing the committed entries and, through their mask, the first block's. The static cache writes it after
// the first block at device-computed slots and reads the keys through the bucket, as the dynamic cache would.
TEST(StaticStep, AnExtendedStaticBlockOverRaggedRowsEqualsTheDynamicCache) {
  auto gpt = bucketed_gpt(8);
  torch::NoGradGuard no_grad;
  const auto cond = gpt->embed_classes(torch::tensor({1, 3}, torch::kInt64));
  const auto i64 = [](std::vector<int64_t> v, int64_t T) { return torch::tensor(v, torch::kInt64).view({2, T}); };
  // Level 0: two siblings; level 1: three children, of sibling 0, 1 and 0, seeing their parent and themselves.
  const auto level0 = torch::eye(2, torch::kBool);
  const auto level1 = torch::tensor({1, 0, 1, 0, 0, 0, 1, 0, 1, 0, 1, 0, 0, 0, 1}, torch::kBool).view({3, 5});
  std::vector<GptOutput> outs;
  for (bool static_block : {false, true}) {
    auto cache = ragged_cache(gpt, cond, static_block, 8);
    gpt->decode_block(cache, i64({9, 10, 11, 12}, 2), i64({3, 3, 1, 1}, 2), level0);
    outs.push_back(gpt->decode_block(cache, i64({13, 14, 15, 16, 17, 18}, 3), i64({4, 4, 4, 2, 2, 2}, 3), level1));
    EXPECT_EQ(cache.pending(), 5);
  }
  EXPECT_TRUE(torch::allclose(outs[0].logits, outs[1].logits, 1e-5, 1e-5))
      << (outs[0].logits - outs[1].logits).abs().max().item<double>();
}

// ZipAR's blocks see only some committed entries (KvBlock::committed): a static block reads that restriction on
// the device through its length bucket and attends as the dynamic cache does, and without it attends otherwise.
TEST(StaticStep, ARestrictedStaticBlockEqualsTheDynamicCache) {
  auto gpt = bucketed_gpt(11);
  torch::NoGradGuard no_grad;
  const auto cond = gpt->embed_classes(torch::tensor({1, 2}, torch::kInt64));
  const auto i64 = [](std::vector<int64_t> v, int64_t T) { return torch::tensor(v, torch::kInt64).view({2, T}); };
  enum Block { kDynamic, kStatic, kStaticUnrestricted };
  std::vector<GptOutput> outs;
  for (Block block : {kDynamic, kStatic, kStaticUnrestricted}) {
    auto cache = gpt->make_cache(2, 4, /*static_lengths=*/block != kDynamic);
    gpt->prefill(cache, cond);
    cache.advance();
    gpt->decode_block(cache, i64({3, 4, 5, 6, 7, 8}, 3), i64({0, 1, 2, 0, 1, 2}, 3), torch::Tensor());
    cache.advance();
    const int64_t L = cache.length(0);
    // Over the whole capacity: query 0 sees every committed entry but the block's second, query 1 the condition's.
    auto seen = torch::zeros({2, cache.capacity()}, torch::kBool);
    seen[0].narrow(0, 0, L).fill_(true);
    seen[0][L - 2] = false;
    seen[1].narrow(0, 0, L - 3).fill_(true);
    outs.push_back(gpt->decode_block(cache, i64({9, 10, 11, 12}, 2), i64({3, 4, 3, 4}, 2), torch::Tensor(),
                                     block != kStaticUnrestricted ? seen : torch::Tensor()));
  }
  EXPECT_TRUE(torch::allclose(outs[0].logits, outs[1].logits, 1e-5, 1e-5))
      << (outs[0].logits - outs[1].logits).abs().max().item<double>();
  EXPECT_FALSE(torch::allclose(outs[0].logits, outs[2].logits, 1e-3, 1e-3)) << "the restriction was not read";
}

// A tree decoder's commit from the walk's device paths (keep_paths: -1 past each path's end, a row keeping nothing
// all -1): the next block sees the same committed entries as after the dynamic cache's host keep. The static
// cache moves its device lengths without a read, and its host plan, an upper bound until then, is
// exact once settled on them (as an iteration's read does); host paths on a static cache are uploaded, the plan
// exact at once.
TEST(StaticStep, KeepingPathsFromDeviceRowsEqualsTheDynamicCache) {
  auto gpt = bucketed_gpt(10);
  torch::NoGradGuard no_grad;
  const auto cond = gpt->embed_classes(torch::tensor({2, 0}, torch::kInt64));
  const auto i64 = [](std::vector<int64_t> v, int64_t T) { return torch::tensor(v, torch::kInt64).view({2, T}); };
  const auto tree = torch::tensor({1, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1, 0, 1, 1, 0, 1}, torch::kBool).view({4, 4});
  enum Keep { kDynamic, kStaticDevicePaths, kStaticHostPaths };
  for (const auto& paths : std::vector<std::vector<std::vector<int64_t>>>{{{0, 1}, {0, 2, 3}}, {{0, 1, 3}, {}}}) {
    std::vector<GptOutput> outs;
    for (Keep keep : {kDynamic, kStaticDevicePaths, kStaticHostPaths}) {
      auto cache = ragged_cache(gpt, cond, keep != kDynamic, 8);
      gpt->decode_block(cache, i64({9, 10, 11, 12, 13, 14, 15, 16}, 4), i64({3, 4, 4, 5, 1, 2, 2, 3}, 4), tree);
      auto rows = torch::full({2, 4}, -1, torch::kInt64);
      for (int64_t b = 0; b < 2; ++b)
        for (size_t j = 0; j < paths[size_t(b)].size(); ++j) rows[b][int64_t(j)] = paths[size_t(b)][j];
      if (keep == kStaticDevicePaths) {
        OpCounter counter;
        cache.keep_paths(rows);
        EXPECT_EQ(counter.host_reads(), 0);
        EXPECT_EQ(cache.length(1), 2 + 4);  // the plan: every row may have kept the whole width
        const auto read = cache.lengths_on_device().clone();
        cache.settle({read[0].item<int64_t>(), read[1].item<int64_t>()});
      } else {
        cache.keep_paths(paths);
      }
      EXPECT_EQ(cache.length(0), 4 + int64_t(paths[0].size()));
      EXPECT_EQ(cache.length(1), 2 + int64_t(paths[1].size()));
      if (keep != kDynamic)
        EXPECT_TRUE(
            torch::equal(cache.lengths_on_device(), torch::tensor({cache.length(0), cache.length(1)}, torch::kInt64)));
      outs.push_back(gpt->decode_block(cache, i64({17, 18}, 1), i64({6, 4}, 1), torch::Tensor()));
    }
    for (size_t i = 1; i < outs.size(); ++i)
      EXPECT_TRUE(torch::allclose(outs[0].logits, outs[i].logits, 1e-5, 1e-5))
          << i << ": " << (outs[0].logits - outs[i].logits).abs().max().item<double>();
  }
}

TEST(StaticStep, CudaGraphTokensEqualEagerTokens) {
  if (!cuda_usable())
    GTEST_SKIP() << "no CUDA device here: graph replay is checked by scripts/gpu_check.sh on a GPU machine";
  const torch::Device cuda(torch::kCUDA, 0);
  for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    const auto gpt = bucketed_gpt(8, dtype, cuda);
    for (double temperature : {0.0, 1.0}) {
      const auto p = test::guided_sampling(temperature);
      const auto r = test::requests(0, 5);
      set_cuda_graphs(false);
      ArDecoder eager(gpt, p);
      const auto want = eager.decode(r).tokens;
      EXPECT_FALSE(eager.replayed_graphs());
      set_cuda_graphs(true);
      ArDecoder graphs(gpt, p);
      const auto first = graphs.decode(r).tokens;   // captures, checks, replays
      const auto second = graphs.decode(r).tokens;  // replays only
      EXPECT_TRUE(graphs.replayed_graphs()) << "the graphs fell back to eager (see the warning above)";
      EXPECT_TRUE(torch::equal(first, want)) << dtype << " T = " << temperature;
      EXPECT_TRUE(torch::equal(second, want)) << dtype << " T = " << temperature;
    }
  }
}

// The speculative decoders' static forwards (target and drafters: SD's draft GPT, SSD's heads around its target,
// the EAGLE drafter's catch-up and tree levels) and their whole iterations (SD, SJD, SSD, EAGLE-2, ADT-Tree,
// EAGLE-1, ZipAR's steps) replayed as graphs pick the tokens of the same decoders run eagerly, bit for bit, in fp32
// and bf16 at T = 0 and 1: a second decode replays only.
TEST(StaticStep, CudaGraphTokensEqualEagerTokensForTheSpeculativeDecoders) {
  if (!cuda_usable())
    GTEST_SKIP() << "no CUDA device here: graph replay is checked by scripts/gpu_check.sh on a GPU machine";
  const torch::Device cuda(torch::kCUDA, 0);
  for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    const test::GraphedDecoderModels models(dtype, cuda);
    for (double temperature : {0.0, 1.0}) {
      const auto p = test::guided_sampling(temperature);
      const auto make = [&](const std::string& name) { return test::graphed_decoder(name, models, p); };
      for (const std::string name : {"sd", "sjd", "ssd", "eagle2", "adt_tree", "eagle1", "zipar"}) {
        const auto r = test::requests(0, 3);
        set_cuda_graphs(false);
        const auto want = make(name)->decode(r).tokens;
        set_cuda_graphs(true);
        auto graphed = make(name);
        const auto first = graphed->decode(r).tokens;   // captures, checks, replays
        const auto second = graphed->decode(r).tokens;  // replays only
        EXPECT_TRUE(torch::equal(first, want)) << name << " " << dtype << " T = " << temperature;
        EXPECT_TRUE(torch::equal(second, want)) << name << " " << dtype << " T = " << temperature;
      }
    }
  }
  set_cuda_graphs(true);
}

}  // namespace vispec
