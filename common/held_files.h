// HeldFiles: attribute files kept open across scrapes and re-read with pread(fd, .., 0). sysfs
// regenerates an attribute's content on every read at offset 0, so a held descriptor always sees the
// current value, and a re-read skips the path walk, the file allocation and the close that
// open+read+close pay every time (bench/pread_floor.cc and bench/scrape_bench.py measure what a
// held read costs). When the kernel object behind a descriptor goes away the re-read fails
// (ENODEV/ENOENT), and the caller drops and rediscovers. Files are opened through NodeFs
// (common/node_fs.h), so a held file is contained and checked like any read; the descriptors
// held are counted against one process-wide HeldFdBudget.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/layout_cache.h"
#include "common/node_fs.h"
#include "common/result.h"
#include "common/shared_names.h"

namespace rdmahd {

// The descriptors HeldFiles may keep open, process-wide. RLIMIT_NOFILE is a property of the
// process, shared by every collector, the HTTP server and libraries, so the budget that keeps held
// attribute files from exhausting it is one per process too (a per-collector budget would need a
// split of the limit that nothing can know). A read past the budget is open/pread/close instead of
// held: it costs time, never a value. Thread-safe (atomics); tests set and reset it.
class HeldFdBudget {
 public:
  // Descriptors left for everything that is not a held attribute: the HTTP server's connections
  // (up to 1024) plus 64 for listeners, logging, netlink and verbs sockets, and transient reads.
  static constexpr std::uint64_t kReserve = 1024 + 64;
  // Budget for a soft RLIMIT_NOFILE of `soft_limit`: soft_limit - kReserve, at least 0.
  static std::size_t ForLimit(std::uint64_t soft_limit);

  static HeldFdBudget& Process();

  // Until set, the budget is ForLimit() of the soft limit at first use.
  void SetLimit(std::size_t limit);
  std::size_t limit() const;
  std::size_t held() const { return held_.load(std::memory_order_relaxed); }
  std::uint64_t unheld_reads() const { return unheld_reads_.load(std::memory_order_relaxed); }
  // True once, the first time a read found the budget exhausted (the caller logs it).
  bool TakeExhaustedNotice();

  // One descriptor may be kept (true) or not (false: the caller closes it and counts the read).
  bool TryHold();
  void Release();
  void CountUnheldRead();

  // Tests: limit back to "from the soft limit", counters to zero (nothing may be held).
  void ResetForTest();

 private:
  static constexpr std::size_t kUnset = static_cast<std::size_t>(-1);
  mutable std::atomic<std::size_t> limit_{kUnset};  // set lazily by limit()
  std::atomic<std::size_t> held_{0};
  std::atomic<std::uint64_t> unheld_reads_{0};
  std::atomic<bool> exhausted_{false};
  std::atomic<bool> notice_taken_{false};
};

// One attribute file held open for re-reading. Collectors that cache a per-file layout hold these
// directly: HeldFiles finds them by path, and hashing and comparing a whole path key on every read
// adds user-side work beside the pread's own, on every one of thousands of files
// (bench/engine_bench.cc measures a collection's CPU). Opened on first Read (through
// NodeFs::OpenRegular, so contained and checked like any read), then pread at offset 0; a failed
// read closes it so the next Read reopens. Past the HeldFdBudget a read opens, reads and closes (and tries to hold again
// next time). Move-only; closes on destruction. Not thread-safe.
class HeldFile {
 public:
  // A folder whose files are held one by one: its path and its listing, which many folders share
  // (ShareNames: a node of a thousand devices lists the same counter names in every port). A
  // HeldFile of the folder is the folder and an index, 24 bytes; a node holds 200,000 of them.
  struct Folder {
    std::string dir;
    std::shared_ptr<const NameList> names;
  };

  explicit HeldFile(std::string path)
      : folder_(std::make_shared<const Folder>(Folder{std::move(path), nullptr})), index_(kWhole) {}
  // The file (*folder->names)[index] in folder->dir.
  HeldFile(std::shared_ptr<const Folder> folder, std::uint32_t index) : folder_(std::move(folder)), index_(index) {}
  // A folder of the files named in `names`: a listing, or a fixed list of attribute names that
  // every folder of its kind shares (a device's fw_ver, board_id, ...; a port's state, rate, ...).
  static std::shared_ptr<const Folder> MakeFolder(std::string dir, std::shared_ptr<const NameList> names) {
    return std::make_shared<const Folder>(Folder{std::move(dir), std::move(names)});
  }
  ~HeldFile() { Close(); }
  HeldFile(HeldFile&& other) noexcept;
  HeldFile& operator=(HeldFile&& other) noexcept;
  HeldFile(const HeldFile&) = delete;
  HeldFile& operator=(const HeldFile&) = delete;

  // Current content, in `buf` (grown as needed, reused across calls); the view is valid until
  // `buf` changes. `fs` is used only to open. Errors name the path and carry errno (ENODEV once
  // the kernel object is gone).
  Result<std::string_view> Read(const NodeFs& fs, std::string& buf);
  std::string path() const {
    return index_ == kWhole ? folder_->dir : folder_->dir + "/" + (*folder_->names)[index_];
  }
  bool is_open() const { return fd_ >= 0; }
  void Close();

 private:
  friend class HeldFolder;  // reads its files the same way
  // The read of a file at `path` (a callable giving it, made only when needed) through `fd`: opens
  // it when closed, holds the descriptor within the budget, closes it after a failed read.
  template <class Path>
  static Result<std::string_view> ReadThrough(int& fd, const Path& path, const NodeFs& fs, std::string& buf);
  static void CloseDescriptor(int& fd);

  static constexpr std::uint32_t kWhole = UINT32_MAX;  // index_: folder_->dir is the file's path
  std::shared_ptr<const Folder> folder_;
  std::uint32_t index_;
  int fd_ = -1;  // >= 0: held, and counted in HeldFdBudget::Process()
};

// Every file of a folder's listing, held as HeldFiles are: the folder (shared with its listing)
// once, and a descriptor per name, 4 bytes a file where HeldFiles of the folder take 24 each (a
// port's counter folders list some 60 files, a node of a thousand devices 120,000). Reads, opens,
// the budget and errors are HeldFile's. Move-only; closes on destruction. Not thread-safe.
class HeldFolder {
 public:
  HeldFolder() = default;  // no folder: no files
  // The files (*folder->names)[0..n) in folder->dir, none open yet.
  explicit HeldFolder(std::shared_ptr<const HeldFile::Folder> folder);
  ~HeldFolder() { Close(); }
  HeldFolder(HeldFolder&& other) noexcept = default;
  HeldFolder& operator=(HeldFolder&& other) noexcept;
  HeldFolder(const HeldFolder&) = delete;
  HeldFolder& operator=(const HeldFolder&) = delete;

  std::size_t size() const { return folder_ ? folder_->names->size() : 0; }
  bool empty() const { return size() == 0; }
  // The folder's listing (null without a folder).
  const std::shared_ptr<const NameList>& names() const;
  const std::string& name(std::size_t i) const { return (*folder_->names)[i]; }
  std::string path(std::size_t i) const { return folder_->dir + "/" + name(i); }

  // File `i`, as HeldFile::Read.
  Result<std::string_view> Read(std::size_t i, const NodeFs& fs, std::string& buf);
  bool is_open(std::size_t i) const { return fds_[i] >= 0; }
  // File `i` is not to be read again while this folder lasts (a sub-folder, a driver refusing the
  // query): its descriptor is closed, and skipped(i) stays true (Close() included) until the
  // folder is made again from a new listing. Reading a skipped file is the caller's mistake.
  void Skip(std::size_t i);
  bool skipped(std::size_t i) const { return fds_[i] == kSkipped; }
  std::size_t open_count() const;
  void Close();

 private:
  static constexpr int kSkipped = -2;
  std::shared_ptr<const HeldFile::Folder> folder_;
  std::unique_ptr<int[]> fds_;  // size(), parallel to the names; -1: not held, kSkipped: skipped
};

// A set of attribute files held open for re-reading, by path: a LayoutCache (common/layout_cache.h)
// whose layouts are single files. Not thread-safe: one collector owns one HeldFiles, and
// collections are serialized by the CollectionEngine.
class HeldFiles {
 public:
  HeldFiles() = default;
  HeldFiles(const HeldFiles&) = delete;
  HeldFiles& operator=(const HeldFiles&) = delete;

  // Current content of `path` (opened on first use, then pread at offset 0). The returned view is
  // valid until the next call on this object. A failed read closes and forgets the descriptor, so a
  // later call reopens it.
  Result<std::string_view> Read(const NodeFs& fs, const std::string& path);

  // Close every descriptor whose path starts with `prefix` (a device went away).
  void ForgetPrefix(std::string_view prefix);
  void Clear() { files_.Clear(); }
  // Files known (held, or read unheld past the budget).
  std::size_t size() const { return files_.size(); }

 private:
  LayoutCache<HeldFile> files_;  // failed ones are dropped
  std::string buf_;
};

// Raise RLIMIT_NOFILE's soft limit to the hard limit (held descriptors need more than 1024 on big
// nodes) and size HeldFdBudget::Process() from the result. Returns the new soft limit.
std::uint64_t RaiseOpenFileLimit();

}  // namespace rdmahd
