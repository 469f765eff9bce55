// Speculative Jacobi decoding (Teng et al., ICLR 2025): training-free and lossless.
#pragma once

#include "decoding/cfg_model.h"
#include "decoding/decoder.h"

namespace vispec {

class SjdDecoder : public Decoder {
 public:
  // window: drafts verified per forward (SJD's 16-token window is the last committed token + 15 drafts).
  SjdDecoder(Gpt target, SamplingParams params, int64_t window)
      : target_(std::move(target), params.cfg_scale), params_(params), window_(window) {}
  std::string name() const override { return "sjd"; }
  DecodeResult decode(const DecodeRequest& request) override;

 private:
  CfgModel target_;
  SamplingParams params_;
  int64_t window_;
};

}  // namespace vispec
