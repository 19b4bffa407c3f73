// NodeFs: every read of the node's kernel state goes through here, relative to configurable roots
// (--path.sysfs, --path.procfs), so every collector runs unchanged against a fixture tree.
//
// HeldFiles: attribute files kept open across scrapes and re-read with pread(fd, .., 0). sysfs
// regenerates an attribute's content on every read at offset 0, so a held descriptor always sees the
// current value, and a re-read skips the path walk, the file allocation and the close that
// open+read+close pay every time (bench/pread_floor.cc and bench/scrape_bench.py measure what a
// held read costs). When the kernel object behind a descriptor goes away the re-read fails
// (ENODEV/ENOENT), and the caller drops and rediscovers.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/layout_cache.h"
#include "common/result.h"
#include "common/shared_names.h"

namespace rdmahd {

// Attribute reads are capped: sysfs attributes are at most one page (4 KiB), so anything bigger is
// not an attribute and is refused rather than read without bound. Readers of bigger procfs files
// (e.g. /proc/PID/numa_maps) pass their own cap.
inline constexpr std::size_t kMaxAttributeBytes = 64 * 1024;

// A file system layer between NodeFs and the files, for tests: makes reads fail as a kernel does
// (EINVAL from a port in switch mode, EIO from a restricted PF's counters) and counts them.
class FsFaults {
 public:
  virtual ~FsFaults() = default;
  // Called before every read of `path` through a NodeFs that carries this layer: ReadFile, and
  // each HeldFile::Read (an open and read, or a pread of a held descriptor). 0 lets the read go
  // on; an errno fails it with that errno. Called from the collection's thread.
  virtual int BeforeRead(const std::string& path) = 0;
};

class NodeFs {
 public:
  // `dcb_dir`: when non-empty, DCB state is read from captured `dcb -j` JSON files in this folder
  // (--path.dcb) instead of netlink, so a captured node can be analysed elsewhere.
  // `dev_root`: where device nodes are looked up (--path.dev: /dev/infiniband/uverbsN, rdma_cm).
  // Empty: DefaultDevRoot(sysfs_root).
  NodeFs(std::string sysfs_root, std::string procfs_root, std::string dcb_dir = "", std::string dev_root = "");

  // "/dev" for the live /sys; for a captured tree whose sysfs folder is named "sys", the folder
  // "dev" beside it (capture/sys -> capture/dev), else "<sysfs root>/dev": analysing a capture
  // never looks at this machine's /dev.
  static std::string DefaultDevRoot(const std::string& sysfs_root);
  // Device nodes are only stat()ed (lstat: never followed), not read, so this root needs no
  // containment.
  const std::string& dev_root() const { return dev_; }
  std::string Dev(std::string_view rel) const;

  const std::string& sysfs_root() const { return sysfs_; }
  // True when the sysfs root is the running kernel's own /sys. False for captured or generated trees.
  static bool IsLiveSysfsRoot(const std::string& root);
  // True when the procfs root is the running kernel's own /proc (so /proc/self is this process).
  static bool IsLiveProcfsRoot(const std::string& root);
  // Whether collectors may ask the running kernel directly (DCB and RDMA netlink, the SIOCETHTOOL
  // ioctl, libibverbs): only when that describes the node these files show, which is exactly when
  // the sysfs root is the live /sys. On any other tree the kernel is never asked, whatever names
  // the tree holds (a captured "eth0" is not this machine's eth0): a fact only the kernel gives is
  // then read from --path.dcb or is unknown, "not captured". The one place this is decided.
  bool asks_kernel() const { return asks_kernel_; }
  // Tests and benchmarks: this same tree, standing for a kernel they control (a fake transport, a
  // network namespace of their own), which collectors then ask as on the live /sys.
  NodeFs AskingKernelForTest() const;
  // Tests: this same tree, every read going through `faults` first (FsFaults above).
  NodeFs WithFaultsForTest(std::shared_ptr<FsFaults> faults) const;
  FsFaults* faults() const { return faults_.get(); }
  const std::string& procfs_root() const { return procfs_; }
  const std::string& dcb_dir() const { return dcb_; }
  // A saved kernel log (--path.kmsg: dmesg, dmesg -r, journalctl -k -o short-monotonic, a copy of
  // /dev/kmsg) read instead of the live /dev/kmsg; empty: the live one where asks_kernel().
  const std::string& kernel_log() const { return kernel_log_; }
  void set_kernel_log(std::string path) { kernel_log_ = std::move(path); }

  // Absolute paths under the roots. `rel` is relative to the root ("class/infiniband").
  std::string Sys(std::string_view rel) const;
  std::string Proc(std::string_view rel) const;

  // Every function below takes a path made by Sys()/Proc() (or under dcb_dir()). On a captured
  // tree (a root that is not the live /sys or /proc, and the DCB folder) the path is resolved
  // inside its root: symlinks are followed as if the root were "/" (relative ones as usual,
  // absolute ones from the root), ".." stops at the root, and a path whose resolution would leave
  // the root fails with EXDEV and a message saying so. A captured tree must not turn the daemon
  // into a reader of the host's files (a symlinked fw_ver once exported a private file as a label).
  // The live /sys and /proc are read directly. Paths under no root are read directly.

  // Whole-file read (open/read/close) of a regular file, at most `max_bytes`. Content is returned
  // as read (no trimming). A FIFO, device, socket or directory is refused ("not a regular file")
  // without blocking, and a bigger file is refused naming the cap.
  Result<std::string> ReadFile(const std::string& path, std::size_t max_bytes = kMaxAttributeBytes) const;
  // Directory entries, sorted, without "." and "..". Symlinks are listed like any entry.
  Result<std::vector<std::string>> ListDir(const std::string& path) const;
  // readlink(2); relative targets are returned as stored.
  Result<std::string> ReadLink(const std::string& path) const;
  bool Exists(const std::string& path) const;
  bool IsDir(const std::string& path) const;

  // Opens a regular file for reading: O_NONBLOCK (a FIFO must not block the collection), checked
  // with fstat, contained as above. The caller owns the descriptor.
  Result<int> OpenRegular(const std::string& path) const;

  // Test hook: behave as on a kernel without openat2 (< 5.6), where containment is checked in user
  // space (realpath of the target within realpath of the root). Process-wide, as the kernel's
  // answer is. Absolute symlinks then resolve on the host (and are refused when they leave).
  static void SetOpenat2UnavailableForTest(bool unavailable);

  struct Root;  // a captured root: its path and a directory descriptor (node_fs.cc)

 private:
  // The contained root `path` is under, or null (live root, or under no root).
  const Root* RootOf(std::string_view path, std::string_view& rel) const;

  std::string sysfs_;
  std::string procfs_;
  std::string dcb_;
  std::string kernel_log_;
  std::string dev_;
  bool asks_kernel_ = false;
  std::shared_ptr<FsFaults> faults_;  // tests only; null: reads go to the files
  // Shared so NodeFs stays cheap to copy; immutable after construction.
  std::vector<std::shared_ptr<const Root>> roots_;
};

// Why ReadRegularFile refused a file, for a caller that words it its own way (the config loader).
struct RegularFileRefusal {
  const char* not_regular = nullptr;       // what the path is instead: "a FIFO", "a directory", ...
  std::optional<std::uint64_t> too_large;  // over max_bytes: its size by fstat, 0 when it grew while read
};

// Whole-file read of a path under no NodeFs root (configuration files, test data): regular files
// only, O_NONBLOCK, at most `max_bytes` (a larger size by fstat is refused before reading). The
// Error says why in words; `refusal`, when given, says it as data too.
Result<std::string> ReadRegularFile(const std::string& path, std::size_t max_bytes,
                                    RegularFileRefusal* refusal = nullptr);

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
