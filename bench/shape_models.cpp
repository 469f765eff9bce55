#include "bench/shape_models.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "decoding/ssd.h"
#include "models/gpt/gpt_config.h"

namespace vispec {

namespace {
// A GPT drafter's depth beside a target cut from `preset_layers` to `layers`: the same fraction of its own.
int64_t scaled_layers(int64_t drafter_layers, int64_t layers, int64_t preset_layers) {
  return std::max<int64_t>(1, std::llround(double(drafter_layers) * double(layers) / double(preset_layers)));
}

// LlamaGen's VQ-16 codebook (normalised codes, as LlamaGen's) with the smallest convolutions a VqConfig allows.
VqModel codebook_vq(int64_t vocab) {
  VqConfig c;
  c.codebook_size = vocab;
  c.ch = 32;
  c.ch_mult = {1, 1};
  c.z_channels = 32;
  c.num_res_blocks = 1;
  c.level_attention = false;
  return VqModel(c);
}
}  // namespace

GptConfig ModelShape::target() const {
  VISPEC_CHECK(layers >= 0 && layers <= 1024, "model shape: layers must be in [0, 1024]");
  VISPEC_CHECK(grid >= 4 && grid <= 128, "model shape: grid must be in [4, 128]");
  VISPEC_CHECK(vocab >= 16 && vocab <= (int64_t(1) << 20), "model shape: vocabulary must be in [16, 2^20]");
  GptConfig c = gpt_preset(preset);
  if (layers > 0) c.n_layer = layers;
  c.vocab_size = vocab;
  c.grid_size = grid;
  c.num_classes = classes;
  c.cls_token_num = 1;
  return c;
}

std::string ModelShape::describe() const {
  const auto c = target();
  const auto full = gpt_preset(preset);
  return fmt::format("{} ({} {}layers, dim {}, {} heads), {}x{} grid ({} tokens), vocabulary {}", preset, c.n_layer,
                     c.n_layer == full.n_layer ? "" : fmt::format("of its {} ", full.n_layer), c.dim, c.n_head, grid,
                     grid, c.image_tokens(), vocab);
}

bool ModelShape::real() const {
  return (layers == 0 || layers == gpt_preset(preset).n_layer) && grid == 24 && vocab == 16384;
}

ModelShape measured_shape(const std::string& preset, int64_t layers, int64_t grid, int64_t vocab, bool on_gpu) {
  ModelShape s;
  s.preset = preset;
  s.layers = layers > 0 ? layers : on_gpu ? 0 : 4;
  s.grid = grid > 0 ? grid : on_gpu ? 24 : 8;
  s.vocab = vocab;
  return s;
}

Gpt random_target(const ModelShape& shape, const torch::TensorOptions& options) {
  torch::manual_seed(0);
  Gpt gpt(shape.target(), options);
  gpt->eval();
  return gpt;
}

DecoderModels random_decoder_models(const DecoderConfig& config, const ModelShape& shape, Gpt target,
                                    ShapeCodebook& codebook) {
  DecoderModels m;
  m.target = std::move(target);
  const auto& t = m.target->config();
  const auto device = m.target->device();
  const auto dtype = m.target->tok_embeddings->weight.scalar_type();
  const auto options = torch::TensorOptions().device(device).dtype(dtype);
  const int64_t preset_layers = gpt_preset(shape.preset).n_layer;
  const auto shared_vq = [&] {
    if (!codebook.vq) {
      codebook.vq = codebook_vq(t.vocab_size);
      codebook.vq->to(device);  // float32, as load_vq places a model config's
      codebook.vq->eval();
    }
    return codebook.vq;
  };
  const auto place = [&](torch::nn::Module& module) {
    module.to(device, dtype);
    module.eval();
  };
  torch::manual_seed(1);
  for (const auto& d : config.drafters) {
    if (d == "eagle_head") {
      m.eagle = EagleDrafter(t);
      place(*m.eagle);
    } else if (d == "gpt") {
      GptConfig b = gpt_preset("GPT-B");
      b.n_layer = scaled_layers(b.n_layer, t.n_layer, preset_layers);
      b.vocab_size = t.vocab_size;
      b.grid_size = t.grid_size;
      b.num_classes = t.num_classes;
      b.cls_token_num = t.cls_token_num;
      m.draft_gpt = Gpt(b, options);
      m.draft_gpt->eval();
    } else if (d == "ssd_heads") {
      const auto& s = config.settings<SsdParams>();
      m.ssd = SsdHeads(t, s.kh, s.kv);
      place(*m.ssd);
    } else if (d == "mulo") {
      GptConfig half = t;
      half.grid_size = t.grid_size / 2;
      m.mulo_gpt = Gpt(half, options);
      m.mulo_gpt->eval();
      m.vq = shared_vq();
      MuloResamplerConfig r;
      r.embed_dim = m.vq->config().codebook_embed_dim;
      m.mulo_resamplers = MuloResamplers(r);
      place(*m.mulo_resamplers);
    } else {
      VISPEC_FAIL("model shape: no random drafter of kind '", d, "' (bench/shape_models.cpp)");
    }
  }
  if (config.neighbours > 0) {
    if (!m.vq) m.vq = shared_vq();
    const int64_t wanted = std::min(config.neighbours, t.vocab_size - 1);
    if (!codebook.neighbours || codebook.neighbours->columns() < wanted)
      codebook.neighbours = std::make_shared<const CodebookNeighbours>(CodebookNeighbours::build(
          m.vq->quantize->embedding->weight, std::max(wanted, std::min<int64_t>(1000, t.vocab_size - 1))));
    m.neighbours = codebook.neighbours;
  }
  return m;
}

}  // namespace vispec
