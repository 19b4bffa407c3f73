// NodeFs: every read of the node's kernel state goes through here, relative to configurable roots
// (--path.sysfs, --path.procfs), so every collector runs unchanged against a fixture tree.
//
// HeldFiles: attribute files kept open across scrapes and re-read with pread(fd, .., 0). sysfs
// regenerates an attribute's content on every read at offset 0, so a held descriptor always sees the
// current value; this costs ~1/10 of open+read+close. When the kernel object behind a descriptor
// goes away the re-read fails (ENODEV/ENOENT), and the caller drops and rediscovers.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"

namespace rdmahd {

class NodeFs {
 public:
  // `dcb_dir`: when non-empty, DCB state is read from captured `dcb -j` JSON files in this folder
  // (--path.dcb) instead of netlink, so a captured node can be analysed elsewhere.
  NodeFs(std::string sysfs_root, std::string procfs_root, std::string dcb_dir = "");

  const std::string& sysfs_root() const { return sysfs_; }
  // True when the sysfs root is the running kernel's own /sys, so that asking the kernel directly
  // (verbs, netlink) describes the same node as the files. False for captured or generated trees.
  static bool IsLiveSysfsRoot(const std::string& root);
  const std::string& procfs_root() const { return procfs_; }
  const std::string& dcb_dir() const { return dcb_; }

  // Absolute paths under the roots. `rel` is relative to the root ("class/infiniband").
  std::string Sys(std::string_view rel) const;
  std::string Proc(std::string_view rel) const;

  // Whole-file read (open/read/close). Content is returned as read (no trimming).
  static Result<std::string> ReadFile(const std::string& path);
  // Directory entries, sorted, without "." and "..". Symlinks are listed like any entry.
  static Result<std::vector<std::string>> ListDir(const std::string& path);
  // readlink(2); relative targets are returned as stored.
  static Result<std::string> ReadLink(const std::string& path);
  static bool Exists(const std::string& path);
  static bool IsDir(const std::string& path);

 private:
  std::string sysfs_;
  std::string procfs_;
  std::string dcb_;
};

// One attribute file held open for re-reading. Collectors that cache a per-file layout hold these
// directly: HeldFiles finds them by path, and the lookup of a ~70-byte path key costs as much as
// the pread's user-side work on 2,000+ files. Opened on first Read, then pread at offset 0; a
// failed read closes it so the next Read reopens. Move-only; closes on destruction. Not
// thread-safe.
class HeldFile {
 public:
  explicit HeldFile(std::string path) : name_(std::move(path)) {}
  // The file `name` in the folder `dir`, which many HeldFiles share (a device has thousands of
  // held files in a few folders: one copy of each folder's path, not one per file).
  HeldFile(std::shared_ptr<const std::string> dir, std::string name) : dir_(std::move(dir)), name_(std::move(name)) {}
  ~HeldFile() { Close(); }
  HeldFile(HeldFile&& other) noexcept;
  HeldFile& operator=(HeldFile&& other) noexcept;
  HeldFile(const HeldFile&) = delete;
  HeldFile& operator=(const HeldFile&) = delete;

  // Current content, in `buf` (grown as needed, reused across calls); the view is valid until
  // `buf` changes. Errors name the path and carry errno (ENODEV once the kernel object is gone).
  Result<std::string_view> Read(std::string& buf);
  std::string path() const { return dir_ ? *dir_ + "/" + name_ : name_; }
  bool is_open() const { return fd_ >= 0; }
  void Close();

 private:
  std::shared_ptr<const std::string> dir_;  // null: name_ is the whole path
  std::string name_;
  int fd_ = -1;
};

// A set of attribute files held open for re-reading. Not thread-safe: one collector owns one
// HeldFiles, and collections are serialized by the CollectionEngine.
class HeldFiles {
 public:
  HeldFiles() = default;
  HeldFiles(const HeldFiles&) = delete;
  HeldFiles& operator=(const HeldFiles&) = delete;

  // Current content of `path` (opened on first use, then pread at offset 0). The returned view is
  // valid until the next call on this object. A failed read closes and forgets the descriptor, so a
  // later call reopens it.
  Result<std::string_view> Read(const std::string& path);

  // Close every descriptor whose path starts with `prefix` (a device went away).
  void ForgetPrefix(std::string_view prefix);
  void Clear() { files_.clear(); }
  std::size_t size() const { return files_.size(); }

 private:
  std::unordered_map<std::string, HeldFile> files_;  // by path; only open ones are kept
  std::string buf_;
};

// Raise RLIMIT_NOFILE's soft limit to the hard limit (held descriptors need more than 1024 on big
// nodes). Returns the new soft limit.
std::uint64_t RaiseOpenFileLimit();

}  // namespace rdmahd
