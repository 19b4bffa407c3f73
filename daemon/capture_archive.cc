#include "daemon/capture_archive.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "common/excerpt.h"
#include "daemon/libarchive_api.h"

namespace rdmahd {
namespace {

struct ArchiveDeleter {
  decltype(&::archive_free) free = nullptr;
  void operator()(struct archive* a) const {
    if (a) free(a);  // closes too
  }
};
using ArchivePtr = std::unique_ptr<struct archive, ArchiveDeleter>;
struct EntryDeleter {
  decltype(&::archive_entry_free) free = nullptr;
  void operator()(archive_entry* e) const { free(e); }
};
using EntryPtr = std::unique_ptr<archive_entry, EntryDeleter>;

std::string LibError(const LibArchive& lib, struct archive* a) {
  const char* s = lib.archive_error_string(a);
  return CapMessage(s ? s : "unknown libarchive error", 200);
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  int get() const { return fd_; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }

 private:
  int fd_;
};

std::vector<std::string_view> Components(std::string_view path) {
  std::vector<std::string_view> out;
  while (!path.empty()) {
    const std::size_t slash = path.find('/');
    std::string_view c = path.substr(0, slash);
    if (!c.empty() && c != ".") out.push_back(c);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}


// ---- Removal on SIGINT, SIGTERM and SIGHUP -----------------------------------------------------
//
// A few slots, each a path to remove (a folder tree or one file) when one of those signals
// arrives. The handler uses async-signal-safe calls only (open, getdents64, unlinkat, close,
// lseek), then restores the default action and raises the signal again, so that the process ends
// as it would have without the handler (killed by it: 128 + N to a shell).

constexpr int kCleanupSlots = 8;
constexpr std::size_t kCleanupPathBytes = 4096;
enum : int { kSlotFree = 0, kSlotFilling = 1, kSlotArmed = 2, kSlotRemoving = 3 };

struct CleanupSlot {
  std::atomic<int> state{kSlotFree};
  bool tree = false;
  char path[kCleanupPathBytes] = {};
};
CleanupSlot g_cleanup[kCleanupSlots];
std::atomic<bool> g_handlers_installed{false};

// Removes the tree at `path` (never following a link) with async-signal-safe calls: folders are
// walked with a stack of descriptors; a folder that is not empty is entered, emptied, and its
// parent read again from the start.
void RemoveTreeSignalSafe(const char* path) {
  constexpr int kMaxDepth = 600;  // a member name is at most 1024 bytes: at most 512 levels
  int fds[kMaxDepth];
  alignas(8) char buf[4096];
  int depth = 0;
  fds[0] = ::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fds[0] < 0) {
    ::unlink(path);
    return;
  }
  // Each step removes or enters something; a tree that will not go (permissions) ends here.
  long budget = 8'000'000;
  while (depth >= 0 && --budget > 0) {
    const int fd = fds[depth];
    const long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
    if (n <= 0) {  // this folder is read to its end: back to its parent, which is read again
      ::close(fd);
      if (--depth >= 0) ::lseek(fds[depth], 0, SEEK_SET);
      continue;
    }
    for (long off = 0; off < n;) {
      // struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name
      unsigned short reclen = 0;
      std::memcpy(&reclen, buf + off + 16, sizeof reclen);
      const char* name = buf + off + 19;
      off += reclen;
      if (reclen == 0) break;
      if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
      if (::unlinkat(fd, name, 0) == 0) continue;
      if (errno != EISDIR && errno != EPERM) continue;
      if (::unlinkat(fd, name, AT_REMOVEDIR) == 0) continue;
      if ((errno == ENOTEMPTY || errno == EEXIST) && depth + 1 < kMaxDepth) {
        const int sub = ::openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0) {
          fds[++depth] = sub;
          break;  // the rest of this buffer is read again when the parent is
        }
      }
    }
  }
  while (depth >= 0) ::close(fds[depth--]);
  ::rmdir(path);
}

void RemoveSlot(CleanupSlot& slot) {
  if (slot.tree) RemoveTreeSignalSafe(slot.path);
  else ::unlink(slot.path);
}

void OnTerminatingSignal(int sig) {
  const int saved = errno;
  for (CleanupSlot& slot : g_cleanup) {
    const int st = slot.state.load();
    // A slot being removed by the program is removed here too: the program will not finish.
    if (st == kSlotArmed || st == kSlotRemoving) RemoveSlot(slot);
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  // Pending until this handler returns (the signal is blocked while it runs), then the default.
  ::raise(sig);
  errno = saved;
}

void InstallHandlers() {
  if (g_handlers_installed.exchange(true)) return;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;  // ignored: left so
    struct sigaction sa {};
    sa.sa_handler = OnTerminatingSignal;
    sigemptyset(&sa.sa_mask);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&sa.sa_mask, s);
    sa.sa_flags = SA_RESTART;
    ::sigaction(sig, &sa, nullptr);
  }
}

// Arms a slot for `path`; -1 when none is free or the path is too long (then nothing is removed
// on a signal).
int ArmCleanup(const std::string& path, bool tree) {
  if (path.empty() || path.size() >= kCleanupPathBytes) return -1;
  InstallHandlers();
  for (int i = 0; i < kCleanupSlots; ++i) {
    int expected = kSlotFree;
    if (g_cleanup[i].state.compare_exchange_strong(expected, kSlotFilling)) {
      std::memcpy(g_cleanup[i].path, path.c_str(), path.size() + 1);
      g_cleanup[i].tree = tree;
      g_cleanup[i].state.store(kSlotArmed);
      return i;
    }
  }
  return -1;
}

// The slot is no longer the handler's to remove (what it names was removed, or published).
void DisarmCleanup(int slot) {
  if (slot >= 0) g_cleanup[slot].state.store(kSlotFree);
}

}  // namespace

// ---- Writing ---------------------------------------------------------------------------------

struct CaptureArchiveWriter::Impl {
  explicit Impl(const LibArchive& l) : lib(l), a(nullptr, ArchiveDeleter{l.archive_free}) {}
  const LibArchive& lib;
  ArchivePtr a;
  std::string path;
  std::string temp;  // the named temporary; empty with an unnamed (O_TMPFILE) one
  int cleanup_slot = -1;
  std::int64_t mtime = 0;
  int fd = -1;  // the temporary, written by libarchive (which closes nothing it did not open)
  bool finished = false;

  ~Impl() {
    a.reset();
    if (fd >= 0) ::close(fd);
    if (!finished && !temp.empty()) ::unlink(temp.c_str());
    DisarmCleanup(cleanup_slot);
  }

  std::string Shown() const { return temp.empty() ? path + " (unnamed until complete)" : temp; }

  Status Write(const std::string& name, unsigned type, unsigned mode, std::string_view data,
               const std::string* link_target) {
    EntryPtr e(lib.archive_entry_new(), EntryDeleter{lib.archive_entry_free});
    lib.archive_entry_set_pathname(e.get(), name.c_str());
    lib.archive_entry_set_filetype(e.get(), type);
    lib.archive_entry_set_perm(e.get(), mode);
    lib.archive_entry_set_mtime(e.get(), mtime, 0);
    lib.archive_entry_set_uid(e.get(), 0);
    lib.archive_entry_set_gid(e.get(), 0);
    lib.archive_entry_set_size(e.get(), type == AE_IFREG ? static_cast<la_int64_t>(data.size()) : 0);
    if (link_target) lib.archive_entry_set_symlink(e.get(), link_target->c_str());
    if (lib.archive_write_header(a.get(), e.get()) != ARCHIVE_OK) {
      return Error{"writing " + TerminalText(name) + " to " + path + ": " + LibError(lib, a.get()), EIO};
    }
    if (!data.empty() &&
        lib.archive_write_data(a.get(), data.data(), data.size()) != static_cast<la_ssize_t>(data.size())) {
      return Error{"writing " + TerminalText(name) + " to " + path + ": " + LibError(lib, a.get()), EIO};
    }
    return Status::Ok();
  }

  // Gives the complete temporary its name `path`, failing (EEXIST) if something has that name.
  Status Publish() {
    const std::string exists = path + " was created while the capture ran: left as it is, and this bundle "
                               "discarded; give another --output";
    if (temp.empty()) {
      const std::string self = "/proc/self/fd/" + std::to_string(fd);
      if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, path.c_str(), AT_SYMLINK_FOLLOW) == 0) return Status::Ok();
      const int e = errno;
      if (e == EEXIST) return Error{exists, e};
      return Error{"cannot name the bundle " + path + ": " + std::strerror(e), e};
    }
    if (::link(temp.c_str(), path.c_str()) == 0) {
      ::unlink(temp.c_str());
      return Status::Ok();
    }
    int e = errno;
    if (e != EEXIST) {
      // A file system without hard links: a rename that fails if the name exists.
      if (::syscall(SYS_renameat2, AT_FDCWD, temp.c_str(), AT_FDCWD, path.c_str(), 1 /* RENAME_NOREPLACE */) == 0) {
        return Status::Ok();
      }
      e = errno;
    }
    if (e == EEXIST) return Error{exists, e};
    return Error{"cannot name the bundle " + path + " (without the risk of replacing a file of that name): " +
                     std::strerror(e),
                 e};
  }
};

CaptureArchiveWriter::CaptureArchiveWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

CaptureArchiveWriter::~CaptureArchiveWriter() {
  if (impl_) impl_->a.reset();
}

Result<std::unique_ptr<CaptureArchiveWriter>> CaptureArchiveWriter::Create(const std::string& path,
                                                                           std::int64_t mtime_unix, Temp temp) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) == 0) return Error{path + " exists: give another --output, or remove it", EEXIST};
  auto lib = LoadLibArchive();
  if (!lib.ok()) return lib.error();
  auto impl = std::make_unique<Impl>(**lib);
  impl->path = path;
  impl->mtime = mtime_unix;
  const std::size_t slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  // An unnamed file in the output's folder: nothing to leave behind, whatever ends the process.
  // Published through /proc/self/fd (linkat of an O_TMPFILE file needs /proc without CAP_DAC_READ_SEARCH).
  if (temp == Temp::kUnnamedIfSupported && ::access("/proc/self/fd", X_OK) == 0) {
    impl->fd = ::open(folder.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  }
  if (impl->fd < 0) {
    // A private name of its own: a leftover of a capture killed with SIGKILL never blocks the next.
    std::string tmpl = path + ".partial-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    impl->fd = ::mkostemp(buf.data(), O_CLOEXEC);
    if (impl->fd < 0) {
      const int e = errno;
      return Error{"cannot create a temporary file in " + folder + " for " + path + ": " + std::strerror(e), e};
    }
    impl->temp = buf.data();
    ::fchmod(impl->fd, 0600);
    impl->cleanup_slot = ArmCleanup(impl->temp, /*tree=*/false);
  }
  impl->a.reset(impl->lib.archive_write_new());
  if (!impl->a || impl->lib.archive_write_add_filter_gzip(impl->a.get()) != ARCHIVE_OK ||
      impl->lib.archive_write_set_format_pax_restricted(impl->a.get()) != ARCHIVE_OK) {
    return Error{"libarchive: cannot set up a .tar.gz writer", EIO};
  }
  if (impl->lib.archive_write_open_fd(impl->a.get(), impl->fd) != ARCHIVE_OK) {
    std::string why = LibError(impl->lib, impl->a.get());
    return Error{"cannot write " + impl->Shown() + ": " + why, EIO};
  }
  return std::unique_ptr<CaptureArchiveWriter>(new CaptureArchiveWriter(std::move(impl)));
}

Status CaptureArchiveWriter::AddDir(const std::string& name) {
  return impl_->Write(name, AE_IFDIR, 0755, {}, nullptr);
}
Status CaptureArchiveWriter::AddFile(const std::string& name, std::string_view data) {
  return impl_->Write(name, AE_IFREG, 0644, data, nullptr);
}
Status CaptureArchiveWriter::AddSymlink(const std::string& name, const std::string& target) {
  return impl_->Write(name, AE_IFLNK, 0777, {}, &target);
}

Status CaptureArchiveWriter::Finish() {
  if (impl_->lib.archive_write_close(impl_->a.get()) != ARCHIVE_OK) {
    return Error{"cannot complete " + impl_->Shown() + ": " + LibError(impl_->lib, impl_->a.get()), EIO};
  }
  impl_->a.reset();
  if (::fsync(impl_->fd) != 0) {
    const int e = errno;
    return Error{"cannot write " + impl_->Shown() + ": " + std::strerror(e), e};
  }
  if (Status s = impl_->Publish(); !s.ok()) return s;
  impl_->finished = true;
  if (::close(impl_->fd) != 0) {
    impl_->fd = -1;
    const int e = errno;
    return Error{"cannot write " + impl_->path + ": " + std::strerror(e), e};
  }
  impl_->fd = -1;
  return Status::Ok();
}

// ---- Reading ---------------------------------------------------------------------------------

std::uint64_t MemberDiskCost(std::uint64_t size) {
  constexpr std::uint64_t kBlock = 4096, kInode = 256;
  const std::uint64_t blocks = size == 0 ? 1 : (size + kBlock - 1) / kBlock;
  return blocks * kBlock + kInode;
}

bool LinkTargetStaysInside(std::string_view link_path, std::string_view target) {
  if (target.empty() || target.front() == '/' || target.find('\0') != std::string_view::npos) return false;
  // The link's own depth: components of its folder.
  std::vector<std::string_view> link = Components(link_path);
  if (link.empty()) return false;
  const std::size_t depth = link.size() - 1;
  std::size_t ups = 0;
  bool named = false;
  for (std::string_view c : Components(target)) {
    if (c == "..") {
      if (named) return false;  // ".." after a name: a link there could make it climb anywhere
      ++ups;
    } else {
      named = true;
    }
  }
  return ups <= depth;
}

namespace {

std::string ByteText(std::uint64_t n) {
  if (n >= (1u << 20) && n % (1u << 20) == 0) return std::to_string(n >> 20) + " MiB";
  return std::to_string(n) + " bytes";
}

// The member name as a relative path, or why not.
std::optional<std::string> CheckMemberName(const char* raw, std::size_t max_bytes, std::string& why) {
  if (!raw || !*raw) {
    why = "a member has no name";
    return std::nullopt;
  }
  std::string_view name(raw);
  if (name.size() > max_bytes) {
    why = "a member name is longer than " + std::to_string(max_bytes) + " bytes";
    return std::nullopt;
  }
  if (name.front() == '/') {
    why = "member " + QuoteExcerpt(name, 80) + " is an absolute path";
    return std::nullopt;
  }
  std::string out;
  for (std::string_view c : Components(name)) {
    if (c == "..") {
      why = "member " + QuoteExcerpt(name, 80) + " has a \"..\" component";
      return std::nullopt;
    }
    if (c.size() > 255) {
      why = "member " + QuoteExcerpt(name, 80) + " has a component longer than 255 bytes";
      return std::nullopt;
    }
    if (!out.empty()) out += '/';
    out += c;
  }
  if (out.empty()) {
    why = "member " + QuoteExcerpt(name, 80) + " names the top folder";
    return std::nullopt;
  }
  return out;
}

// Opens (creating when missing) the folders of `rel`'s parent under `root_fd`, never through a
// link; returns the parent's descriptor and sets `leaf`.
Result<Fd> OpenParent(int root_fd, const std::string& rel, std::string& leaf) {
  std::vector<std::string_view> parts = Components(rel);
  leaf = std::string(parts.back());
  Fd dir(::dup(root_fd));
  if (dir.get() < 0) return Error{std::string("dup: ") + std::strerror(errno), errno};
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    const std::string c(parts[i]);
    int fd = ::openat(dir.get(), c.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
      if (::mkdirat(dir.get(), c.c_str(), 0755) != 0 && errno != EEXIST) {
        const int e = errno;
        return Error{"cannot create a folder for " + QuoteExcerpt(rel, 80) + ": " + std::strerror(e), e};
      }
      fd = ::openat(dir.get(), c.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0) {
      const int e = errno;
      return Error{"member " + QuoteExcerpt(rel, 80) + " lies under a link or a file (" + std::strerror(e) + ")",
                   EXDEV};
    }
    dir = Fd(fd);
  }
  return dir;
}

}  // namespace

Status ExtractCapture(const std::string& archive_path, const std::string& dest, const ExtractLimits& limits) {
  Fd root(::open(dest.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (root.get() < 0) {
    const int e = errno;
    return Error{"cannot open " + dest + ": " + std::strerror(e), e};
  }
  // The archive file: a regular file, opened without blocking on a FIFO.
  Fd in(::open(archive_path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  struct stat st{};
  if (in.get() < 0 || ::fstat(in.get(), &st) != 0) {
    const int e = errno;
    return Error{"cannot open " + TerminalText(archive_path) + ": " + std::strerror(e), e};
  }
  if (!S_ISREG(st.st_mode)) return Error{TerminalText(archive_path) + " is not a regular file", EINVAL};
  const int flags = ::fcntl(in.get(), F_GETFL);
  if (flags >= 0) ::fcntl(in.get(), F_SETFL, flags & ~O_NONBLOCK);

  auto loaded = LoadLibArchive();
  if (!loaded.ok()) return loaded.error();
  const LibArchive& lib = **loaded;
  const std::string where = "capture " + TerminalText(archive_path) + ": ";
  auto open_archive = [&]() -> Result<ArchivePtr> {
    if (::lseek(in.get(), 0, SEEK_SET) != 0) {
      const int err = errno;
      return Error{"cannot read " + TerminalText(archive_path) + ": " + std::strerror(err), err};
    }
    ArchivePtr a(lib.archive_read_new(), ArchiveDeleter{lib.archive_free});
    lib.archive_read_support_filter_gzip(a.get());
    lib.archive_read_support_format_tar(a.get());
    if (lib.archive_read_open_fd(a.get(), in.get(), 64 * 1024) != ARCHIVE_OK) {
      return Error{TerminalText(archive_path) + " is not a .tar.gz: " + LibError(lib, a.get()), EBADMSG};
    }
    return a;
  };
  const std::string too_many = where + "more than " + std::to_string(limits.members) +
                               " members (files, folders and links): over the bound on what a bundle may hold";
  const std::string too_big = where + "its members would take more than " + ByteText(limits.disk_bytes) +
                              " of disk where it is extracted (the bound; each member counted as whole 4 KiB "
                              "blocks, at least one, plus 256 bytes for its inode)";
  // First the headers only, writing nothing: a bundle over the bounds is refused before it fills
  // the disk it is extracted to.
  {
    auto scan = open_archive();
    if (!scan) return scan.error();
    std::uint64_t members = 0, cost = 0;
    std::vector<char> skip(64 * 1024);
    for (;;) {
      archive_entry* e = nullptr;
      const int r = lib.archive_read_next_header(scan->get(), &e);
      if (r == ARCHIVE_EOF) break;
      if (r != ARCHIVE_OK && r != ARCHIVE_WARN) return Error{where + LibError(lib, scan->get()), EBADMSG};
      if (++members > limits.members) return Error{too_many, EFBIG};
      const bool file = lib.archive_entry_filetype(e) == AE_IFREG;
      const la_int64_t size = file && lib.archive_entry_size_is_set(e) ? lib.archive_entry_size(e) : 0;
      if (size > static_cast<la_int64_t>(limits.member_bytes)) {
        std::string why;
        auto rel = CheckMemberName(lib.archive_entry_pathname(e), limits.path_bytes, why);
        if (!rel) return Error{where + why, EXDEV};
        return Error{where + "member " + QuoteExcerpt(*rel, 80) + " is bigger than " +
                         std::to_string(limits.member_bytes) + " bytes",
                     EFBIG};
      }
      cost += MemberDiskCost(size > 0 ? static_cast<std::uint64_t>(size) : 0);
      if (cost > limits.disk_bytes) return Error{too_big, ENOSPC};
      // Read past the data (a skip decompresses it as well); its real length is checked when written.
      while (lib.archive_read_data(scan->get(), skip.data(), skip.size()) > 0) {
      }
    }
  }
  auto opened = open_archive();
  if (!opened) return opened.error();
  ArchivePtr a = std::move(*opened);
  // Then again while writing, on the bytes written (a gzip bomb, a header that lies).
  std::uint64_t members = 0, cost = 0;
  std::vector<char> buf(64 * 1024);
  for (;;) {
    archive_entry* e = nullptr;
    const int r = lib.archive_read_next_header(a.get(), &e);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) return Error{where + LibError(lib, a.get()), EBADMSG};
    if (++members > limits.members) return Error{too_many, EFBIG};
    std::string why;
    auto rel = CheckMemberName(lib.archive_entry_pathname(e), limits.path_bytes, why);
    if (!rel) return Error{where + why, EXDEV};
    if (lib.archive_entry_hardlink(e) != nullptr) {
      return Error{where + "member " + QuoteExcerpt(*rel, 80) + " is a hard link", EXDEV};
    }
    const auto type = lib.archive_entry_filetype(e);
    if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
      return Error{where + "member " + QuoteExcerpt(*rel, 80) +
                       " is not a regular file, a folder or a symbolic link (a device, FIFO or socket)",
                   EXDEV};
    }
    std::string leaf;
    auto parent = OpenParent(root.get(), *rel, leaf);
    if (!parent) return Error{where + parent.error().message, parent.error().errno_value};
    if (type != AE_IFREG && (cost += MemberDiskCost(0)) > limits.disk_bytes) return Error{too_big, ENOSPC};
    if (type == AE_IFDIR) {
      if (::mkdirat(parent->get(), leaf.c_str(), 0755) != 0) {
        struct stat ds{};
        if (errno != EEXIST || ::fstatat(parent->get(), leaf.c_str(), &ds, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISDIR(ds.st_mode)) {
          return Error{where + "member " + QuoteExcerpt(*rel, 80) + " cannot be made a folder (" +
                           std::strerror(errno == EEXIST ? EEXIST : errno) + ")",
                       EEXIST};
        }
      }
      continue;
    }
    if (type == AE_IFLNK) {
      const char* target = lib.archive_entry_symlink(e);
      if (!target || !LinkTargetStaysInside(*rel, target)) {
        return Error{where + "symbolic link " + QuoteExcerpt(*rel, 80) + " points out of the capture", EXDEV};
      }
      if (::symlinkat(target, parent->get(), leaf.c_str()) != 0) {
        const int err = errno;
        return Error{where + "member " + QuoteExcerpt(*rel, 80) + ": " + std::strerror(err), err};
      }
      continue;
    }
    if (lib.archive_entry_size_is_set(e) && lib.archive_entry_size(e) > static_cast<la_int64_t>(limits.member_bytes)) {
      return Error{where + "member " + QuoteExcerpt(*rel, 80) + " is bigger than " +
                       std::to_string(limits.member_bytes) + " bytes",
                   EFBIG};
    }
    Fd out(::openat(parent->get(), leaf.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (out.get() < 0) {
      const int err = errno;
      return Error{where + "member " + QuoteExcerpt(*rel, 80) + ": " + std::strerror(err) +
                       (err == EEXIST ? " (a second member of the same name)" : ""),
                   err};
    }
    std::uint64_t size = 0;
    if ((cost += MemberDiskCost(0)) > limits.disk_bytes) return Error{too_big, ENOSPC};
    for (;;) {
      const la_ssize_t n = lib.archive_read_data(a.get(), buf.data(), buf.size());
      if (n == 0) break;
      if (n < 0) return Error{where + "member " + QuoteExcerpt(*rel, 80) + ": " + LibError(lib, a.get()), EBADMSG};
      const std::uint64_t before = MemberDiskCost(size);
      size += static_cast<std::uint64_t>(n);
      if (size > limits.member_bytes) {
        return Error{where + "member " + QuoteExcerpt(*rel, 80) + " is bigger than " +
                         std::to_string(limits.member_bytes) + " bytes",
                     EFBIG};
      }
      if ((cost += MemberDiskCost(size) - before) > limits.disk_bytes) return Error{too_big, ENOSPC};
      const char* p = buf.data();
      std::size_t left = static_cast<std::size_t>(n);
      while (left > 0) {
        const ssize_t w = ::write(out.get(), p, left);
        if (w < 0) {
          if (errno == EINTR) continue;
          const int err = errno;
          return Error{where + "writing " + QuoteExcerpt(*rel, 80) + ": " + std::strerror(err), err};
        }
        p += w;
        left -= static_cast<std::size_t>(w);
      }
    }
  }
  return Status::Ok();
}

// ---- TempDir -----------------------------------------------------------------------------------

Result<TempDir> TempDir::Create(const std::string& prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + prefix + "XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    const int e = errno;
    return Error{"cannot create a temporary folder (" + tmpl + "): " + std::strerror(e), e};
  }
  std::string path(buf.data());
  const int slot = ArmCleanup(path, /*tree=*/true);
  return TempDir(std::move(path), slot);
}

void TempDir::RemoveNow() {
  if (path_.empty()) return;
  if (slot_ >= 0) {
    int armed = kSlotArmed;
    if (!g_cleanup[slot_].state.compare_exchange_strong(armed, kSlotRemoving)) slot_ = -1;
  }
  ::nftw(
      path_.c_str(),
      [](const char* p, const struct stat*, int type, struct FTW*) {
        if (type == FTW_DP) ::rmdir(p);
        else ::unlink(p);
        return 0;
      },
      16, FTW_DEPTH | FTW_PHYS);
  DisarmCleanup(slot_);
  slot_ = -1;
  path_.clear();
}

TempDir::~TempDir() { RemoveNow(); }

}  // namespace rdmahd
