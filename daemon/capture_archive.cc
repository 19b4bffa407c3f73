#include "daemon/capture_archive.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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

}  // namespace

// ---- Writing ---------------------------------------------------------------------------------

struct CaptureArchiveWriter::Impl {
  explicit Impl(const LibArchive& l) : lib(l), a(nullptr, ArchiveDeleter{l.archive_free}) {}
  const LibArchive& lib;
  ArchivePtr a;
  std::string path, temp;
  std::int64_t mtime = 0;
  int fd = -1;  // the temporary, written by libarchive (which closes nothing it did not open)
  bool finished = false;

  ~Impl() {
    a.reset();
    if (fd >= 0) ::close(fd);
  }

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
};

CaptureArchiveWriter::CaptureArchiveWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

CaptureArchiveWriter::~CaptureArchiveWriter() {
  if (impl_ && !impl_->finished) {
    impl_->a.reset();
    ::unlink(impl_->temp.c_str());
  }
}

Result<std::unique_ptr<CaptureArchiveWriter>> CaptureArchiveWriter::Create(const std::string& path,
                                                                           std::int64_t mtime_unix) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) == 0) return Error{path + " exists: give another --output, or remove it", EEXIST};
  auto lib = LoadLibArchive();
  if (!lib.ok()) return lib.error();
  auto impl = std::make_unique<Impl>(**lib);
  impl->path = path;
  impl->temp = path + ".partial";
  impl->mtime = mtime_unix;
  Fd fd(::open(impl->temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (fd.get() < 0) {
    const int e = errno;
    return Error{"cannot create " + impl->temp + ": " + std::strerror(e), e};
  }
  impl->a.reset(impl->lib.archive_write_new());
  if (!impl->a || impl->lib.archive_write_add_filter_gzip(impl->a.get()) != ARCHIVE_OK ||
      impl->lib.archive_write_set_format_pax_restricted(impl->a.get()) != ARCHIVE_OK) {
    ::unlink(impl->temp.c_str());
    return Error{"libarchive: cannot set up a .tar.gz writer", EIO};
  }
  impl->fd = fd.release();
  if (impl->lib.archive_write_open_fd(impl->a.get(), impl->fd) != ARCHIVE_OK) {
    std::string why = LibError(impl->lib, impl->a.get());
    ::unlink(impl->temp.c_str());
    return Error{"cannot write " + impl->temp + ": " + why, EIO};
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
    return Error{"cannot complete " + impl_->temp + ": " + LibError(impl_->lib, impl_->a.get()), EIO};
  }
  impl_->a.reset();
  if (::fsync(impl_->fd) != 0 || ::close(impl_->fd) != 0) {
    const int e = errno;
    impl_->fd = -1;
    return Error{"cannot write " + impl_->temp + ": " + std::strerror(e), e};
  }
  impl_->fd = -1;
  if (::rename(impl_->temp.c_str(), impl_->path.c_str()) != 0) {
    const int e = errno;
    return Error{"cannot rename " + impl_->temp + " to " + impl_->path + ": " + std::strerror(e), e};
  }
  impl_->finished = true;
  return Status::Ok();
}

// ---- Reading ---------------------------------------------------------------------------------

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
  ArchivePtr a(lib.archive_read_new(), ArchiveDeleter{lib.archive_free});
  lib.archive_read_support_filter_gzip(a.get());
  lib.archive_read_support_format_tar(a.get());
  if (lib.archive_read_open_fd(a.get(), in.get(), 64 * 1024) != ARCHIVE_OK) {
    return Error{TerminalText(archive_path) + " is not a .tar.gz: " + LibError(lib, a.get()), EBADMSG};
  }
  const std::string where = "capture " + TerminalText(archive_path) + ": ";
  std::uint64_t members = 0, total = 0;
  std::vector<char> buf(64 * 1024);
  for (;;) {
    archive_entry* e = nullptr;
    const int r = lib.archive_read_next_header(a.get(), &e);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) return Error{where + LibError(lib, a.get()), EBADMSG};
    if (++members > limits.members) {
      return Error{where + "more than " + std::to_string(limits.members) + " members", EFBIG};
    }
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
    for (;;) {
      const la_ssize_t n = lib.archive_read_data(a.get(), buf.data(), buf.size());
      if (n == 0) break;
      if (n < 0) return Error{where + "member " + QuoteExcerpt(*rel, 80) + ": " + LibError(lib, a.get()), EBADMSG};
      size += static_cast<std::uint64_t>(n);
      total += static_cast<std::uint64_t>(n);
      if (size > limits.member_bytes) {
        return Error{where + "member " + QuoteExcerpt(*rel, 80) + " is bigger than " +
                         std::to_string(limits.member_bytes) + " bytes",
                     EFBIG};
      }
      if (total > limits.total_bytes) {
        return Error{where + "more than " + std::to_string(limits.total_bytes) + " bytes in all", EFBIG};
      }
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
  return TempDir(std::string(buf.data()));
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  ::nftw(
      path_.c_str(),
      [](const char* p, const struct stat*, int type, struct FTW*) {
        if (type == FTW_DP) ::rmdir(p);
        else ::unlink(p);
        return 0;
      },
      16, FTW_DEPTH | FTW_PHYS);
}

}  // namespace rdmahd
