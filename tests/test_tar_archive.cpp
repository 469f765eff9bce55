// The archives of `output: shards` (io/tar_archive.h): what TarWriter writes reads back member for member,
// whole or not at all; an archive is untrusted input, so a damaged header or a truncated file is one line
// naming the file and where, never a crash or a member made up. (Python's tarfile and WebDataset read the
// same archives in tests/shards_output.sh.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/check.h"
#include "io/atomic_file.h"
#include "io/file_digest.h"
#include "io/tar_archive.h"
#include "scheduler/metrics_file.h"
#include "error_of.h"
#include "temp_dir_test.h"

namespace vispec {

using test::error_of;

namespace fs = std::filesystem;

namespace {
class TarArchive : public test::TempDirTest {
 protected:
  TarArchive() : TempDirTest("tar") {}
  // Members of sizes 0, 1, 511, 512, 513 and 3000 bytes (block boundaries), with every byte value.
  std::vector<TarMember> members() const {
    std::vector<TarMember> m;
    for (const size_t size : {0, 1, 511, 512, 513, 3000}) {
      std::string contents(size, '\0');
      for (size_t i = 0; i < size; ++i) contents[i] = char((i * 7 + size) % 256);
      m.push_back({"00000042." + std::to_string(size) + ".bin", contents});
    }
    return m;
  }
  std::string write_archive(const std::string& name) const {
    const auto path = (dir / name).string();
    TarWriter w(path);
    for (const auto& m : members()) w.add(m.name, m.contents);
    const auto digest = w.commit();
    EXPECT_EQ(digest, digest_file(path));
    return path;
  }
  static void patch(const std::string& path, size_t at, char byte) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(at));
    f.put(byte);
  }
};

TEST_F(TarArchive, MembersReadBackAsWrittenInBlocksOf512Bytes) {
  const auto path = write_archive("a.tar");
  const auto back = read_tar(path);
  const auto expected = members();
  ASSERT_EQ(back.size(), expected.size());
  int64_t blocks = 2;  // the end-of-archive blocks
  for (size_t i = 0; i < back.size(); ++i) {
    EXPECT_EQ(back[i].name, expected[i].name);
    EXPECT_EQ(back[i].contents, expected[i].contents) << expected[i].name;
    blocks += 1 + int64_t((expected[i].contents.size() + 511) / 512);
  }
  EXPECT_EQ(int64_t(fs::file_size(path)), 512 * blocks);
  // The same members make the same bytes: nothing of the time or the user goes in.
  EXPECT_EQ(digest_file(path), digest_file(write_archive("b.tar")));
}

TEST_F(TarArchive, AnArchiveNotCommittedLeavesNothing) {
  const auto path = (dir / "c.tar").string();
  {
    TarWriter w(path);
    w.add("x.png", "partial");
  }  // destroyed without commit: an exception or a stop signal mid-unit
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST_F(TarArchive, DamagedOrTruncatedArchivesAreOneLineNamingTheFile) {
  const auto path = write_archive("d.tar");
  // A flipped byte in the second member's header: its checksum no longer holds.
  const size_t second = 512;  // the first member is empty: its header alone
  patch(path, second + 10, 'Z');
  auto e = error_of([&] { read_tar(path); });
  EXPECT_NE(e.find(path + ": the tar member at byte 512: bad header checksum"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos);
  // Cut inside a member's data, and cut before the end-of-archive blocks.
  const auto whole = read_file(write_archive("e.tar"));
  write_file_atomic(path, whole.substr(0, 512 * 4 + 100));
  e = error_of([&] { read_tar(path); });
  EXPECT_NE(e.find("runs past the end of the file"), std::string::npos) << e;
  write_file_atomic(path, whole.substr(0, whole.size() - 1024));
  e = error_of([&] { read_tar(path); });
  EXPECT_NE(e.find(path + ": the archive ends without its end-of-archive blocks"), std::string::npos) << e;
}

TEST(MetricsRecord, UnitRangesReadBackInFileOrderAndBadOnesAreOneLine) {
  const auto record = nlohmann::json::parse(R"({"bytes": 10, "crc32": "0a1b2c3d", "units": [[4, 6], [0, 1], [9, 9]]})");
  EXPECT_EQ(metrics_record_units(record, "S"), (std::vector<int64_t>{4, 5, 6, 0, 1, 9}));
  for (const char* bad :
       {R"({"bytes": 10, "crc32": "0a1b2c3d", "units": [[6, 4]]})", R"({"bytes": 10, "crc32": "zz", "units": []})",
        R"({"bytes": 10, "units": []})", R"({"bytes": 10, "crc32": "0a1b2c3d", "units": [[0, 99999999999]]})"}) {
    const auto e = error_of([&] { metrics_record_units(nlohmann::json::parse(bad), "OUT/summary.json"); });
    EXPECT_EQ(e.rfind("OUT/summary.json: metrics: ", 0), 0u) << bad << " -> " << e;
  }
}

}  // namespace
}  // namespace vispec
