// The end-of-line layout of a decode block (models/gpt/sequence_layout.h), entry by entry: which fed tokens get an
// end-of-line entry, whose output each token returns, what every entry may attend to, and the padding of rows
// that add fewer entries.
#include <gtest/gtest.h>

#include "models/gpt/sequence_layout.h"

namespace vispec {

TEST(SequenceLayout, RowEndingTokensGetTheirEndOfLineEntry) {
  EXPECT_TRUE(ends_row(3, 4, 16));
  EXPECT_FALSE(ends_row(2, 4, 16));
  EXPECT_FALSE(ends_row(15, 4, 16));  // the image's last token: nothing follows it
  // Row 0: a tree over positions 2, 3, 3, 4 (two siblings end the row); row 1: a chain at positions 5 to 8
  // (7 ends a row): each row its own layout.
  const auto positions = torch::tensor({{2, 3, 3, 4}, {5, 6, 7, 8}});
  const auto block = eol_block(positions, 4, 16, torch::kCPU);
  EXPECT_EQ(block.entries, 6);  // row 0: 4 nodes + 2 end-of-line entries; row 1: 4 + 1, padded
  EXPECT_EQ(block.node_starts[0], (std::vector<int64_t>{0, 1, 3, 5, 6}));
  EXPECT_EQ(block.node_starts[1], (std::vector<int64_t>{0, 1, 2, 4, 5}));
  EXPECT_TRUE(torch::equal(block.source, torch::tensor({{0, 1, 1, 2, 2, 3}, {0, 1, 2, 2, 3, 0}})));
  EXPECT_TRUE(torch::equal(block.is_eol, torch::tensor({{0, 0, 1, 0, 1, 0}, {0, 0, 0, 1, 0, 0}}).to(torch::kBool)));
  EXPECT_TRUE(torch::equal(block.is_padding, torch::tensor({{0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 1}}).to(torch::kBool)));
  // A row-ending token's output is its end-of-line entry's.
  EXPECT_TRUE(torch::equal(block.output_entry, torch::tensor({{0, 2, 4, 5}, {0, 1, 3, 4}})));
}

TEST(SequenceLayout, EndOfLineEntriesSeeTheirTokenAndAreSeenByItsDescendants) {
  const auto positions = torch::tensor({{2, 3, 3, 4}});
  const auto block = eol_block(positions, 4, 16, torch::kCPU);
  // Nodes: 0 at 2; 1 and 2 at 3, children of 0; 3 at 4, child of 1.
  const auto tree = torch::tensor({{1, 0, 0, 0}, {1, 1, 0, 0}, {1, 0, 1, 0}, {1, 1, 0, 1}}, torch::kBool);
  // Entries: 0 = node 0, 1 = node 1, 2 = its end of line, 3 = node 2, 4 = its end of line, 5 = node 3.
  const auto expected = torch::tensor({{1, 0, 0, 0, 0, 0},
                                       {1, 1, 0, 0, 0, 0},  // node 1 does not see its own end of line
                                       {1, 1, 1, 0, 0, 0},  // which sees node 1 and what node 1 sees
                                       {1, 0, 0, 1, 0, 0},  // the sibling sees neither
                                       {1, 0, 0, 1, 1, 0},
                                       {1, 1, 1, 0, 0, 1}},  // node 3 follows node 1's end of line
                                      torch::kBool);
  EXPECT_TRUE(torch::equal(eol_block_mask(tree, block)[0], expected)) << eol_block_mask(tree, block);
}

TEST(SequenceLayout, PaddingEntriesSeeOnlyThemselvesAndAreSeenByNone) {
  const auto block = eol_block(torch::tensor({{3}, {4}}), 4, 16, torch::kCPU);  // row 0 ends a row, row 1 not
  const auto mask = eol_block_mask(torch::ones({1, 1}, torch::kBool), block);
  EXPECT_TRUE(torch::equal(mask[0], torch::tensor({{1, 0}, {1, 1}}, torch::kBool)));
  EXPECT_TRUE(torch::equal(mask[1], torch::tensor({{1, 0}, {0, 1}}, torch::kBool)));
}

}  // namespace vispec
