// Whole-file digests of large, rarely changing files (model weights), remembered across runs: the job
// fingerprint covers every byte of every weight file (scheduler/fingerprint.h), and reading 14 GB of 7B weights
// at each start would cost a minute. A digest is kept with the file's absolute path, size, modification time
// (ns) and inode; any change of these reads the file again. The cache is one JSON line per digest in
// $VISPEC_CACHE_DIR, else $XDG_CACHE_HOME/vispec, else ~/.cache/vispec: file-digests.jsonl, appended (a
// line is one write, so concurrent jobs do not tear it); where it cannot be written, digests are simply
// recomputed.
#pragma once

#include <string>

#include "io/file_digest.h"

namespace vispec {

FileDigest cached_file_digest(const std::string& path);
std::string digest_cache_path();

}  // namespace vispec
