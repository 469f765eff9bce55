// Plain autoregressive decoding: one target forward per token. The reference for every speed and quality ratio.
#pragma once

#include "decoding/cfg_model.h"
#include "decoding/decoder.h"

namespace vispec {

class ArDecoder : public Decoder {
 public:
  ArDecoder(Gpt target, SamplingParams params) : target_(std::move(target), params.cfg_scale), params_(params) {}
  std::string name() const override { return "ar"; }
  DecodeResult decode(const DecodeRequest& request) override;

 private:
  CfgModel target_;
  SamplingParams params_;
};

}  // namespace vispec
