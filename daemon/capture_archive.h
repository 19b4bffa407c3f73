// The support bundle's archive (`rdma-healthd capture`, `check --capture`): a gzip-compressed POSIX
// tar written and read through libarchive, never by hand.
//
// Reading is hardened: a bundle comes from another machine and is hostile input. ExtractCapture
// writes only inside its destination folder and refuses the whole archive (an Error naming the
// member, escaped) at the first member that is
//   - an absolute path, a path with a ".." component, an empty or over-long name;
//   - anything but a regular file, a folder or a symbolic link (devices, FIFOs, hard links);
//   - a symbolic link whose target is absolute, or has ".." after a name ("a/../.."), or climbs
//     more levels than the link is deep (it would leave the folder);
//   - a member under a symbolic link (a path component that is a link), or one already extracted;
//   - bigger than the per-member cap, or past the total or member-count caps (a gzip bomb stops at
//     the total cap, counted in bytes written, not in what headers claim).
// With ".." allowed only as the leading components of a relative target, every link resolves by
// first climbing real folders (no path a member was written under is a link) and then descending,
// through links that obey the same rule: no chain of links can leave the folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"

namespace rdmahd {

// Writes a .tar.gz. Entries are added in order; Finish() completes the file (until then it is a
// temporary beside `path`, removed if the writer is destroyed unfinished).
class CaptureArchiveWriter {
 public:
  // Creates `path` (mode 0600: a bundle describes the node). Fails if it exists.
  static Result<std::unique_ptr<CaptureArchiveWriter>> Create(const std::string& path, std::int64_t mtime_unix);
  ~CaptureArchiveWriter();
  CaptureArchiveWriter(const CaptureArchiveWriter&) = delete;
  CaptureArchiveWriter& operator=(const CaptureArchiveWriter&) = delete;

  Status AddDir(const std::string& name);
  Status AddFile(const std::string& name, std::string_view data);
  Status AddSymlink(const std::string& name, const std::string& target);
  Status Finish();

 private:
  struct Impl;
  explicit CaptureArchiveWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct ExtractLimits {
  std::uint64_t member_bytes = 16u << 20;   // one file
  std::uint64_t total_bytes = 256u << 20;   // all files
  std::uint64_t members = 200000;           // entries of any kind
  std::size_t path_bytes = 1024;            // one member's name
};

// Extracts `archive` (gzip-compressed tar) into `dest`, an existing empty folder. See above.
Status ExtractCapture(const std::string& archive, const std::string& dest, const ExtractLimits& limits = {});

// Whether a symbolic link at `link_path` (relative to the extraction folder) may point to
// `target`: the rule above. Exposed for tests.
bool LinkTargetStaysInside(std::string_view link_path, std::string_view target);

// A private temporary folder (mode 0700) under $TMPDIR or /tmp, removed with everything in it
// (never following a link) when this goes away.
class TempDir {
 public:
  static Result<TempDir> Create(const std::string& prefix);
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  TempDir& operator=(TempDir&&) = delete;
  TempDir(const TempDir&) = delete;
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace rdmahd
