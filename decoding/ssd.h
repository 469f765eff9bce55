// SSD (spatially speculative decoding, the SSD paper): spatial draft heads, and rows drafted whole and corrected
// in place by rounds of parallel verification instead of rolled back.
#pragma once

#include <memory>
#include <vector>

#include "decoding/common/cfg_model.h"
#include "decoding/common/decoder.h"
#include "decoding/common/iteration_graphs.h"
#include "decoding/common/verify.h"
#include "models/drafters/ssd_heads.h"

namespace vispec {

struct SsdParams {
  int64_t kh = 5;  // horizontal heads used for the first row (offsets +1 .. +kh)
  int64_t kv = 1;  // rows drafted together by the vertical heads (+1 .. +kv rows)
  int64_t r = 2;   // verify-and-correct rounds per row when kv = 1
  int64_t b = 5;   // kv >= 2: rounds on every drafted row before the first is committed
  int64_t i = 4;   // kv >= 2: rounds on the remaining rows after each commit
};

class SsdDecoder : public Decoder {
 public:
  // accept: the rule of the first row's chain and of every cell in the rounds (neighbours: LANTERN rules only).
  SsdDecoder(Gpt target, SsdHeads heads, SamplingParams params, SsdParams ssd, AcceptanceParams accept = {},
             std::shared_ptr<const CodebookNeighbours> neighbours = nullptr);
  std::string name() const override { return "ssd"; }
  DecodeResult decode(const DecodeRequest& request) override;
  bool refills_rows() const override { return true; }

 private:
  struct Run;  // one decode's state, its rows' schedules and a tick's phases (ssd.cpp)

  CfgModel target_;
  SsdHeads heads_;
  SamplingParams params_;
  SsdParams ssd_;
  ChainRule first_row_rule_;  // a chain of kh drafts
  ChainRule cell_rule_;       // one cell, verified on its own
  IterationGraphs graphs_;    // the decode state's buffers and the first row's iteration graphs
};

// One tick of the block of later rows that starts at image row y: a round of verify-and-correct over `rows`
// image rows from first_row (its index `round` in the block: its draws), or the commit of image row first_row.
struct SsdTick {
  bool commit = false;
  int64_t first_row = 0, rows = 1, round = 0;
};
// The block's ticks: kv = 1, r rounds then the commit; kv >= 2, b rounds on every drafted row, then each commit
// followed by i rounds on the rows left.
std::vector<SsdTick> ssd_block_ticks(int64_t y, int64_t height, const SsdParams& p);

// Target forwards for one image when every first-row iteration commits `first_row_forwards` forwards' worth:
// the first row's forwards, one commit of its last token, then per group of kv rows b + 1 + (kv - 1)(i + 1)
// (kv = 1: r + 1 per row).
int64_t ssd_forwards_after_first_row(int64_t height, const SsdParams& p);

}  // namespace vispec
