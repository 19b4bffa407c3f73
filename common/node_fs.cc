#include "common/node_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>

#include "common/pread_all.h"

namespace rdmahd {

struct NodeFs::Root {
  std::string path;  // as given, without trailing '/' ("" for "/")
  int fd = -1;       // O_PATH directory descriptor; -1 if the root could not be opened at startup

  Root() = default;
  Root(const Root&) = delete;
  Root& operator=(const Root&) = delete;
  ~Root() {
    if (fd >= 0) ::close(fd);
  }
};

namespace {

// Set once a kernel answered ENOSYS to openat2 (< 5.6), or by a test. Process-wide because the
// kernel's answer is.
std::atomic<bool> g_openat2_unavailable{false};

std::string Join(const std::string& root, std::string_view rel) {
  std::string out = root;
  if (!out.empty() && out.back() == '/') out.pop_back();
  if (!rel.empty() && rel.front() != '/') out += '/';
  out += rel;
  return out;
}

std::string StripTrailingSlashes(std::string p) {
  while (!p.empty() && p.back() == '/') p.pop_back();
  return p;
}

// Closes a descriptor on scope exit.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

int Openat2(int dirfd, const char* rel, std::uint64_t flags) {
  open_how how{};
  how.flags = flags;
  // RESOLVE_IN_ROOT: symlinks and ".." are resolved as if dirfd were "/". RESOLVE_NO_MAGICLINKS:
  // no /proc/self/fd-style jumps to wherever a descriptor points.
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  for (;;) {
    long fd = ::syscall(SYS_openat2, dirfd, rel, &how, sizeof how);
    if (fd >= 0) return static_cast<int>(fd);
    if (errno != EINTR && errno != EAGAIN) return -1;  // EAGAIN: a concurrent rename, retry
  }
}

bool IsWithin(std::string_view path, std::string_view root) {
  if (root.empty() || root == "/") return true;
  return path.size() >= root.size() && path.compare(0, root.size(), root) == 0 &&
         (path.size() == root.size() || path[root.size()] == '/');
}

const char* FileKind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Opens `path` as a regular file for reading. O_NONBLOCK: opening a FIFO with no writer returns at
// once instead of blocking the collection (fstat then refuses it). O_NOATIME: a monitor should not
// mark what it watches as accessed (on tmpfs and disk filesystems every read would otherwise update
// the inode; sysfs keeps no atime, so there it changes nothing); the kernel allows it only to the
// file's owner or with CAP_FOWNER, so EPERM falls back to a plain open. `open` does the opening
// with the given flags and returns -1/errno.
// `st_out`, when given, gets the file's fstat (for a refused one too).
template <class OpenFn>
Result<int> OpenRegularWith(const std::string& path, OpenFn open, struct stat* st_out = nullptr) {
  constexpr int kFlags = O_RDONLY | O_CLOEXEC | O_NONBLOCK;
  int fd = open(kFlags | O_NOATIME);
  if (fd < 0 && errno == EPERM) fd = open(kFlags);
  if (fd < 0) return Error::FromErrno("open " + path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return Error::FromErrno("fstat " + path, err);
  }
  if (st_out != nullptr) *st_out = st;
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error{"open " + path + ": not a regular file (" + FileKind(st.st_mode) + "), not read",
                 S_ISDIR(st.st_mode) ? EISDIR : EINVAL};
  }
  return fd;
}

Result<std::string> ReadWhole(const std::string& path, Result<int> fd, std::size_t max_bytes) {
  if (!fd.ok()) return fd.error();
  std::string buf;
  std::size_t used = 0;
  Status st = PreadAll(*fd, buf, used, /*stop_on_short_read=*/false, max_bytes);
  ::close(*fd);
  if (!st.ok()) return ReadError(path, st.error());
  buf.resize(used);
  return buf;
}

Result<std::vector<std::string>> ListOpenDir(const std::string& path, int fd) {
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    int err = errno;
    ::close(fd);
    return Error::FromErrno("opendir " + path, err);
  }
  std::vector<std::string> names;
  errno = 0;
  while (dirent* e = ::readdir(dir)) {
    std::string_view n = e->d_name;
    if (n == "." || n == "..") continue;
    names.emplace_back(n);
  }
  int err = errno;
  ::closedir(dir);
  if (err != 0) return Error::FromErrno("readdir " + path, err);
  std::sort(names.begin(), names.end());
  return names;
}

// Opens `rel` (relative to the root; "." for the root itself) inside `root` with `flags`, or -1
// with errno. EXDEV: the path resolves, but only by leaving the root (with openat2, found out only
// when `diagnose` is set: it costs a second lookup, worth it for a read but not for Exists).
int OpenInRoot(const NodeFs::Root& root, const std::string& rel, int flags, bool diagnose = true) {
  const std::string full = root.path + "/" + rel;
  if (!g_openat2_unavailable.load(std::memory_order_relaxed)) {
    // A root that did not exist at startup may exist now: open it for this call.
    Fd tmp_root(root.fd >= 0 ? -1 : ::open(root.path.empty() ? "/" : root.path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    const int dirfd = root.fd >= 0 ? root.fd : tmp_root.get();
    if (dirfd < 0) return -1;
    int fd = Openat2(dirfd, rel.c_str(), static_cast<std::uint64_t>(flags));
    if (fd >= 0) return fd;
    if (errno != ENOSYS) {
      const int err = errno;
      if (diagnose && (err == ENOENT || err == ENOTDIR || err == ELOOP)) {
        // Not found inside the root. If the host resolves the same path, it does so by leaving the
        // root (an absolute symlink to a host file, or ".." past the top): say so, so a reader of
        // the error sees a refused escape rather than a missing file.
        Fd host(::open(full.c_str(), O_PATH | O_CLOEXEC));
        if (host.get() >= 0) {
          errno = EXDEV;
          return -1;
        }
      }
      errno = err;
      return -1;
    }
    g_openat2_unavailable.store(true, std::memory_order_relaxed);
  }
  // Kernels without openat2: resolve in user space and refuse a target outside the root. (The
  // check and the open are two steps; a captured tree is not expected to change under us.)
  char resolved[PATH_MAX];
  char root_real[PATH_MAX];
  if (::realpath(full.c_str(), resolved) == nullptr) return -1;
  if (::realpath(root.path.empty() ? "/" : root.path.c_str(), root_real) == nullptr || !IsWithin(resolved, root_real)) {
    errno = EXDEV;
    return -1;
  }
  return ::open(resolved, flags);
}

Error ContainedError(const std::string& what, const std::string& path, const NodeFs::Root& root, int err) {
  if (err == EXDEV) {
    return Error{what + " " + path + ": resolves outside the root " + (root.path.empty() ? "/" : root.path) +
                     " (a symlink or \"..\" leaves the captured tree), not read",
                 EXDEV};
  }
  return Error::FromErrno(what + " " + path, err);
}

}  // namespace

std::string NodeFs::DefaultDevRoot(const std::string& sysfs_root) {
  if (IsLiveSysfsRoot(sysfs_root)) return "/dev";
  std::string root = StripTrailingSlashes(sysfs_root);
  // A capture laid out like a node (capture/sys, capture/dev): its dev folder. Any other tree:
  // inside it. Never the analysing machine's /dev (a root "/x" must not give "/dev").
  const std::size_t slash = root.rfind('/');
  const std::string_view last = slash == std::string::npos ? std::string_view(root) : std::string_view(root).substr(slash + 1);
  if (last == "sys" && slash != std::string::npos && slash > 0) return root.substr(0, slash) + "/dev";
  if (last == "sys" && slash == std::string::npos) return "dev";
  return root + "/dev";
}

std::string NodeFs::Dev(std::string_view rel) const {
  std::string out = dev_;
  if (!out.empty() && out.back() != '/') out += '/';
  out += rel;
  return out;
}

NodeFs::NodeFs(std::string sysfs_root, std::string procfs_root, std::string dcb_dir, std::string dev_root)
    : sysfs_(std::move(sysfs_root)), procfs_(std::move(procfs_root)), dcb_(std::move(dcb_dir)),
      dev_(dev_root.empty() ? DefaultDevRoot(sysfs_) : dev_root == "/" ? dev_root : StripTrailingSlashes(dev_root)) {
  auto add = [&](const std::string& p) {
    if (p.empty()) return;
    auto r = std::make_shared<Root>();
    r->path = StripTrailingSlashes(p);
    r->fd = ::open(r->path.empty() ? "/" : r->path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    roots_.push_back(std::move(r));
  };
  asks_kernel_ = IsLiveSysfsRoot(sysfs_);
  // The live trees are the kernel's own: read directly (no containment cost on the hot path).
  if (!IsLiveSysfsRoot(sysfs_)) add(sysfs_);
  if (!IsLiveProcfsRoot(procfs_)) add(procfs_);
  add(dcb_);
}

NodeFs NodeFs::AskingKernelForTest() const {
  NodeFs out = *this;
  out.asks_kernel_ = true;
  return out;
}

NodeFs NodeFs::WithFaultsForTest(std::shared_ptr<FsFaults> faults) const {
  NodeFs out = *this;
  out.faults_ = std::move(faults);
  return out;
}

void NodeFs::SetOpenat2UnavailableForTest(bool unavailable) { g_openat2_unavailable.store(unavailable); }

const NodeFs::Root* NodeFs::RootOf(std::string_view path, std::string_view& rel) const {
  const Root* best = nullptr;
  for (const auto& r : roots_) {
    if (!IsWithin(path, r->path)) continue;
    if (best == nullptr || r->path.size() > best->path.size()) best = r.get();
  }
  if (best != nullptr) {
    rel = path.substr(best->path.size());
    while (!rel.empty() && rel.front() == '/') rel.remove_prefix(1);
    if (rel.empty()) rel = ".";
  }
  return best;
}

std::string NodeFs::Sys(std::string_view rel) const { return Join(sysfs_, rel); }
std::string NodeFs::Proc(std::string_view rel) const { return Join(procfs_, rel); }

Result<int> NodeFs::OpenRegular(const std::string& path) const {
  std::string_view rel;
  const Root* root = RootOf(path, rel);
  if (root == nullptr) return OpenRegularWith(path, [&](int flags) { return ::open(path.c_str(), flags); });
  const std::string rel_s(rel);
  Result<int> fd = OpenRegularWith(path, [&](int flags) { return OpenInRoot(*root, rel_s, flags); });
  if (!fd.ok() && fd.error().errno_value == EXDEV) return ContainedError("open", path, *root, EXDEV);
  return fd;
}

Result<std::string> NodeFs::ReadFile(const std::string& path, std::size_t max_bytes) const {
  if (faults_ != nullptr) {
    if (int err = faults_->BeforeRead(path)) return Error::FromErrno("read " + path, err);
  }
  return ReadWhole(path, OpenRegular(path), max_bytes);
}

Result<std::string> ReadRegularFile(const std::string& path, std::size_t max_bytes, RegularFileRefusal* refusal) {
  struct stat st {};
  // O_NOCTTY: a terminal given as the path never becomes the daemon's controlling terminal.
  Result<int> fd = OpenRegularWith(path, [&](int flags) { return ::open(path.c_str(), flags | O_NOCTTY); }, &st);
  if (!fd.ok()) {
    if (refusal != nullptr && st.st_mode != 0 && !S_ISREG(st.st_mode)) refusal->not_regular = FileKind(st.st_mode);
    return fd.error();
  }
  const std::string too_large = "read " + path + ": larger than " + CapText(max_bytes) + ", the cap for this file";
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    ::close(*fd);
    if (refusal != nullptr) refusal->too_large = static_cast<std::uint64_t>(st.st_size);
    return Error{too_large, EFBIG};
  }
  Result<std::string> text = ReadWhole(path, fd, max_bytes);
  if (!text.ok() && text.error().message == too_large && refusal != nullptr) refusal->too_large = 0;  // it grew
  return text;
}

Result<std::vector<std::string>> NodeFs::ListDir(const std::string& path) const {
  constexpr int kFlags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK;
  std::string_view rel;
  const Root* root = RootOf(path, rel);
  int fd = root == nullptr ? ::open(path.c_str(), kFlags) : OpenInRoot(*root, std::string(rel), kFlags);
  if (fd < 0) {
    if (root != nullptr) return ContainedError("opendir", path, *root, errno);
    return Error::FromErrno("opendir " + path, errno);
  }
  return ListOpenDir(path, fd);
}

Result<std::string> NodeFs::ReadLink(const std::string& path) const {
  std::string buf(4096, '\0');
  std::string_view rel;
  const Root* root = RootOf(path, rel);
  ssize_t n;
  if (root == nullptr) {
    n = ::readlink(path.c_str(), buf.data(), buf.size());
  } else {
    // The link itself is not followed: resolve its folder inside the root, then readlinkat.
    const std::size_t slash = rel.rfind('/');
    const std::string parent = slash == std::string_view::npos ? "." : std::string(rel.substr(0, slash));
    const std::string name(slash == std::string_view::npos ? rel : rel.substr(slash + 1));
    Fd dir(OpenInRoot(*root, parent, O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (dir.get() < 0) return ContainedError("readlink", path, *root, errno);
    n = ::readlinkat(dir.get(), name.c_str(), buf.data(), buf.size());
  }
  if (n < 0) return Error::FromErrno("readlink " + path, errno);
  buf.resize(static_cast<std::size_t>(n));
  return buf;
}

bool NodeFs::Exists(const std::string& path) const {
  std::string_view rel;
  const Root* root = RootOf(path, rel);
  if (root == nullptr) return ::access(path.c_str(), F_OK) == 0;
  Fd fd(OpenInRoot(*root, std::string(rel), O_PATH | O_CLOEXEC, /*diagnose=*/false));
  return fd.get() >= 0;
}

bool NodeFs::IsDir(const std::string& path) const {
  std::string_view rel;
  const Root* root = RootOf(path, rel);
  struct stat st {};
  if (root == nullptr) return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  Fd fd(OpenInRoot(*root, std::string(rel), O_PATH | O_DIRECTORY | O_CLOEXEC, /*diagnose=*/false));
  return fd.get() >= 0;  // O_DIRECTORY: opens only a directory
}

bool NodeFs::IsLiveSysfsRoot(const std::string& root) {
  std::string_view r = root;
  while (r.size() > 1 && r.back() == '/') r.remove_suffix(1);
  return r == "/sys";
}

bool NodeFs::IsLiveProcfsRoot(const std::string& root) {
  std::string_view r = root;
  while (r.size() > 1 && r.back() == '/') r.remove_suffix(1);
  return r == "/proc";
}

}  // namespace rdmahd
