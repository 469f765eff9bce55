#include "tiny_models.h"

namespace vispec::test {

GptConfig tiny_gpt_config() {
  GptConfig c;
  c.vocab_size = 64;
  c.dim = 32;
  c.n_layer = 2;
  c.n_head = 4;
  c.multiple_of = 16;
  c.grid_size = 4;
  c.num_classes = 3;
  c.cls_token_num = 1;
  return c;
}

namespace {
Gpt random_gpt(uint64_t seed, const GptConfig& config, const torch::TensorOptions& options) {
  torch::manual_seed(seed);
  Gpt g(config, options);
  // Larger weights than LlamaGen's 0.02 init so that logits are far from uniform and differences show.
  torch::NoGradGuard no_grad;
  for (auto& p : g->parameters()) p.normal_(0.0, 0.3);
  g->eval();
  return g;
}
}  // namespace

Gpt tiny_gpt(uint64_t seed, int64_t vocab) {
  auto config = tiny_gpt_config();
  config.vocab_size = vocab;
  return random_gpt(seed, config, torch::TensorOptions());
}

Gpt tiny_grid_gpt(uint64_t seed, int64_t grid, torch::Dtype dtype, torch::Device device) {
  auto config = tiny_gpt_config();
  config.grid_size = grid;
  return random_gpt(seed, config, torch::TensorOptions().dtype(dtype).device(device));
}

Gpt tiny_sequence_gpt(uint64_t seed, int64_t grid, int64_t vocab) {
  auto config = tiny_gpt_config();
  config.grid_size = grid;
  config.vocab_size = vocab;
  return random_gpt(seed, config, torch::TensorOptions());
}

VqConfig tiny_vq_config() {
  VqConfig c;
  c.codebook_size = 32;
  c.codebook_embed_dim = 4;
  c.in_channels = 1;
  c.z_channels = 8;
  c.ch = 8;
  c.ch_mult = {1, 2};
  c.num_res_blocks = 1;
  c.norm_groups = 4;
  return c;
}

EagleDrafter tiny_eagle_drafter(const GptConfig& c, uint64_t seed) {
  torch::manual_seed(seed);
  EagleDrafter d(c);
  torch::NoGradGuard no_grad;
  for (auto& p : d->parameters()) p.normal_(0.0, 0.3);
  d->eval();
  return d;
}

TinyMulo::TinyMulo() {
  auto dc = test::tiny_gpt_config();
  dc.grid_size = 2;
  torch::manual_seed(7);
  drafter = Gpt(dc);
  auto vc = test::tiny_vq_config();
  vc.codebook_size = 64;
  vq = VqModel(vc);
  MuloResamplerConfig rc;
  rc.embed_dim = vc.codebook_embed_dim;
  rc.width = 16;
  resamplers = MuloResamplers(rc);
  torch::NoGradGuard no_grad;
  for (auto& p : drafter->parameters()) p.normal_(0.0, 0.3);
  for (auto& p : resamplers->parameters()) p.normal_(0.0, 0.3);
  for (torch::nn::Module* m :
       {static_cast<torch::nn::Module*>(drafter.get()), static_cast<torch::nn::Module*>(vq.get()),
        static_cast<torch::nn::Module*>(resamplers.get())})
    m->eval();
  neighbours =
      std::make_shared<const CodebookNeighbours>(CodebookNeighbours::build(vq->quantize->embedding->weight, 63));
}

}  // namespace vispec::test
