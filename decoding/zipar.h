// ZipAR (He et al., ICML 2025): training-free parallel decoding of the raster by rows, with a fixed window s.
#pragma once

#include <map>
#include <vector>

#include "decoding/common/cfg_model.h"
#include "decoding/common/decoder.h"
#include "decoding/common/iteration_graphs.h"

namespace vispec {

class ZipArDecoder : public Decoder {
 public:
  // window: the tokens a row must have before the row below starts (s; LlamaGen's default 8).
  ZipArDecoder(Gpt target, SamplingParams params, int64_t window)
      : target_(std::move(target), params.cfg_scale), params_(params), window_(window) {}
  std::string name() const override { return "zipar"; }
  DecodeResult decode(const DecodeRequest& request) override;

 private:
  CfgModel target_;
  SamplingParams params_;
  int64_t window_;
  IterationGraphs graphs_;  // the decode state's buffers and the steps' graphs
  // Each step shape's inputs on the device (T fed cells, K sampled, C cache slots): a buffer that never moves,
  // rewritten by an upload before every step of that shape, which its graph reads.
  std::map<std::vector<int64_t>, torch::Tensor> step_inputs_;
};

// Target forwards ZipAR takes on an H x W grid with window s (prefill included): W for row 0, then a row
// starts every s forwards and takes W, so 2W + (H - 2) s (AR: H W; s = W gives AR's count).
int64_t zipar_forwards(int64_t height, int64_t width, int64_t window);

}  // namespace vispec
