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
//   - bigger than the per-member cap, or past the member-count cap or the disk bound.
// The disk bound counts what a member costs on the disk it is written to, not its bytes: each
// member (file, folder or link) as its size rounded up to whole 4 KiB blocks, at least one block,
// plus 256 bytes for its inode. The count and the bound are checked on the headers first (a
// pass that writes nothing), then again on the bytes written (a gzip bomb, a header that lies).
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

// Writes a .tar.gz. Entries are added in order; Finish() completes the file. Until then it is an
// unnamed file in `path`'s folder (O_TMPFILE), or, where the file system has none, a private
// temporary PATH.partial-XXXXXX removed if the writer is destroyed unfinished or on SIGINT, SIGTERM
// or SIGHUP. Finish() publishes it with a link that fails if `path` exists (linkat, else link() or
// renameat2(RENAME_NOREPLACE)): a file created at `path` while the capture ran is never replaced.
class CaptureArchiveWriter {
 public:
  enum class Temp { kUnnamedIfSupported, kNamed };  // kNamed: the fallback, for tests
  // Creates `path` (mode 0600: a bundle describes the node). Fails if it exists.
  static Result<std::unique_ptr<CaptureArchiveWriter>> Create(const std::string& path, std::int64_t mtime_unix,
                                                              Temp temp = Temp::kUnnamedIfSupported);
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

// The bounds fit every bundle `capture` writes (CaptureLimits: 100,000 entries and 64 MiB, plus
// manifest.json: at most 64 MiB + 100,001 x 4.25 KiB = 479 MiB as counted here).
struct ExtractLimits {
  std::uint64_t member_bytes = 16u << 20;   // one file
  std::uint64_t disk_bytes = 512u << 20;    // all members, each as it costs on disk (MemberDiskCost)
  std::uint64_t members = 100001;           // entries of any kind
  std::size_t path_bytes = 1024;            // one member's name
};

// What a member of `size` bytes (0 for a folder or link) is counted as against the disk bound:
// whole 4 KiB blocks, at least one, plus 256 bytes for its inode.
std::uint64_t MemberDiskCost(std::uint64_t size);

// Extracts `archive` (gzip-compressed tar) into `dest`, an existing empty folder. See above.
Status ExtractCapture(const std::string& archive, const std::string& dest, const ExtractLimits& limits = {});

// Whether a symbolic link at `link_path` (relative to the extraction folder) may point to
// `target`: the rule above. Exposed for tests.
bool LinkTargetStaysInside(std::string_view link_path, std::string_view target);

// A private temporary folder (mode 0700) under $TMPDIR or /tmp, removed with everything in it
// (never following a link) when this goes away, when RemoveNow() is called (before a process
// leaves through _Exit), or when SIGINT, SIGTERM or SIGHUP arrives: the handler removes it (with
// async-signal-safe calls only) and the process then dies of that signal, as it would have.
class TempDir {
 public:
  static Result<TempDir> Create(const std::string& prefix);
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)), slot_(other.slot_) {
    other.path_.clear();
    other.slot_ = -1;
  }
  TempDir& operator=(TempDir&&) = delete;
  TempDir(const TempDir&) = delete;
  ~TempDir();
  const std::string& path() const { return path_; }
  // Removes the folder now (idempotent).
  void RemoveNow();

 private:
  TempDir(std::string path, int slot) : path_(std::move(path)), slot_(slot) {}
  std::string path_;
  int slot_ = -1;  // its place among the paths the signal handler removes; -1: none
};

}  // namespace rdmahd
