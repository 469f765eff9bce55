#include "graphed_decoders.h"

#include "core/check.h"
#include "decoding/adt_tree.h"
#include "decoding/eagle1.h"
#include "decoding/eagle2.h"
#include "decoding/mulo_sd.h"
#include "decoding/sd.h"
#include "decoding/sjd.h"
#include "decoding/sjd_pac.h"
#include "decoding/ssd.h"
#include "decoding/zipar.h"

namespace vispec::test {

GraphedDecoderModels::GraphedDecoderModels(torch::Dtype dtype, torch::Device device) {
  target = tiny_grid_gpt(9, 12, dtype, device);
  drafter = tiny_grid_gpt(10, 12, dtype, device);
  torch::manual_seed(3);
  heads = SsdHeads(target->config(), 3, 2);
  heads->eval();
  heads->to(device, dtype);
  eagle = tiny_eagle_drafter(target->config(), 4);
  eagle->to(device, dtype);
  torch::manual_seed(5);  // LANTERN's neighbours over a random codebook of the target's vocabulary
  neighbours = std::make_shared<const CodebookNeighbours>(
      CodebookNeighbours::build(torch::randn({target->config().vocab_size, 8}), 4));
  if (device.is_cpu()) mulo.emplace();
}

const std::vector<std::string> kGraphedDecoders = {"sd",         "sd-coolsd",     "sjd",      "scd",
                                                   "scd-gumbel", "gsd",           "sjd_pac",  "ssd",
                                                   "eagle2",     "lantern",       "adt_tree", "adt_tree-coolsd",
                                                   "eagle1",     "eagle1-coolsd", "zipar",    "mulo_sd"};

std::unique_ptr<Decoder> graphed_decoder(const std::string& name, const GraphedDecoderModels& m,
                                         const SamplingParams& p) {
  AcceptanceParams cool;  // Cool-SD's rule: its weight table lives on the device, uploaded once
  cool.rule = AcceptRule::kCoolSd;
  const auto& target = m.target;
  if (name == "sd") return std::make_unique<SdDecoder>(target, m.drafter, p, 4, AcceptanceParams{}, nullptr);
  if (name == "sd-coolsd") return std::make_unique<SdDecoder>(target, m.drafter, p, 4, cool, nullptr);
  if (name == "sjd") return std::make_unique<SjdDecoder>(target, p, 6);
  if (name == "scd" || name == "scd-gumbel")
    return std::make_unique<SjdDecoder>(target, p, 6, AcceptanceParams{}, nullptr,
                                        name == "scd" ? Coupling::kMaximal : Coupling::kGumbel);
  if (name == "gsd") {  // GSD's grouped rule, its embedding filter wide enough to keep some of the tiny model's
    AcceptanceParams gsd;
    gsd.rule = AcceptRule::kGsd;
    gsd.distance = 8.0;
    return std::make_unique<SjdDecoder>(target, p, 6, gsd);
  }
  if (name == "sjd_pac") return std::make_unique<SjdPacDecoder>(target, p, PacShape{3, 3, 15});
  if (name == "ssd") return std::make_unique<SsdDecoder>(target, m.heads, p, SsdParams{3, 2, 2, 2, 1});
  if (name == "eagle2")
    return std::make_unique<Eagle2Decoder>("eagle2", target, m.eagle, p, TreeShape{3, 4, 16}, AcceptanceParams{},
                                           nullptr);
  if (name == "lantern") {
    AcceptanceParams lantern;  // LANTERN's rule on EAGLE-2's trees: its neighbour table on the device too
    lantern.rule = AcceptRule::kLantern;
    lantern.k = 4;
    lantern.delta = 0.2;
    return std::make_unique<Eagle2Decoder>("lantern", target, m.eagle, p, TreeShape{2, 3, 8}, lantern, m.neighbours);
  }
  if (name == "adt_tree" || name == "adt_tree-coolsd") {
    AdtParams adt;  // shapes that move within depth 1 .. 4 and top-k 2 .. 4: the graphs are keyed by the widest
    adt.step_k = 1;
    adt.min_k = 2;
    adt.max_k = 4;
    adt.max_depth = 4;
    return std::make_unique<Eagle2Decoder>("adt_tree", target, m.eagle, p, TreeShape{3, 3, 10},
                                           name == "adt_tree" ? AcceptanceParams{} : cool, nullptr, adt);
  }
  if (name == "eagle1" || name == "eagle1-coolsd")
    return std::make_unique<Eagle1Decoder>(name == "eagle1" ? "eagle1" : "coolsd", target, m.eagle, p,
                                           named_static_tree("naive_extend_57"),
                                           name == "eagle1" ? AcceptanceParams{} : cool, nullptr);
  if (name == "zipar") return std::make_unique<ZipArDecoder>(target, p, 3);
  if (name == "mulo_sd") {
    VISPEC_CHECK(m.mulo.has_value(), "graphed_decoder: MuLo-SD's tiny pair is made on the CPU only");
    MuloParams mulo;
    mulo.tau = 0.08;
    mulo.radius = 1;
    return std::make_unique<MuloSdDecoder>(m.mulo->decoder(p, mulo));
  }
  VISPEC_FAIL("graphed_decoder: no decoder named ", name);
}

}  // namespace vispec::test
