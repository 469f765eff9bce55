// Plain autoregressive decoding: one target forward per token. The reference for every speed and quality ratio.
#pragma once

#include <memory>

#include "decoding/common/cfg_model.h"
#include "decoding/common/decoder.h"

namespace vispec {

class ArDecoder : public Decoder {
 public:
  ArDecoder(Gpt target, SamplingParams params);
  ~ArDecoder() override;
  std::string name() const override { return "ar"; }
  DecodeResult decode(const DecodeRequest& request) override;
  // Whether the last decode replayed its steps as CUDA graphs (models/gpt/step_graph.h).
  bool replayed_graphs() const;
  // vispec step-cost only: decode just the first `steps` steps after the prefill (0: the whole image), for a
  // model whose whole image would take too long to time; the tokens past them are meaningless.
  void set_step_limit(int64_t steps) { step_limit_ = steps; }

 private:
  struct Session;
  Session& session(int64_t batch);

  CfgModel target_;
  SamplingParams params_;
  std::unique_ptr<Session> session_;
  int64_t step_limit_ = 0;  // the static buffers of the last batch size decoded
};

}  // namespace vispec
