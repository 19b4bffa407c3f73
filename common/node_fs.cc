#include "common/node_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace rdmahd {
namespace {

std::string Join(const std::string& root, std::string_view rel) {
  std::string out = root;
  if (!out.empty() && out.back() == '/') out.pop_back();
  if (!rel.empty() && rel.front() != '/') out += '/';
  out += rel;
  return out;
}

// Opens an attribute file that will be polled. O_NOATIME: a monitor should not mark what it
// watches as accessed (on tmpfs and disk filesystems every read would otherwise update the inode;
// sysfs keeps no atime, so there it changes nothing). The kernel allows the flag only to the file's
// owner or with CAP_FOWNER, so EPERM falls back to a plain open.
int OpenForPolling(const char* path) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NOATIME);
  if (fd < 0 && errno == EPERM) fd = ::open(path, O_RDONLY | O_CLOEXEC);
  return fd;
}

// Reads from offset 0 into buf. A sysfs attribute is at most one page and is returned whole by the
// first read, so held sysfs descriptors stop at the first short read (one syscall per attribute);
// procfs seq_files may return less than asked before EOF, so whole-file reads go on until EOF.
// `buf` keeps its size between calls (growing only), so re-reads do not zero-fill a page each
// time; the content is the first `used` bytes.
Status PreadAll(int fd, std::string& buf, std::size_t& used_out, bool stop_on_short_read) {
  if (buf.size() < 4096) buf.resize(4096);
  std::size_t used = 0;
  for (;;) {
    ssize_t n = ::pread(fd, buf.data() + used, buf.size() - used, static_cast<off_t>(used));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno("read", errno);
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
    if (used < buf.size()) {
      if (stop_on_short_read) break;
      continue;
    }
    buf.resize(buf.size() * 2);
  }
  used_out = used;
  return Status::Ok();
}

}  // namespace

NodeFs::NodeFs(std::string sysfs_root, std::string procfs_root, std::string dcb_dir)
    : sysfs_(std::move(sysfs_root)), procfs_(std::move(procfs_root)), dcb_(std::move(dcb_dir)) {}

std::string NodeFs::Sys(std::string_view rel) const { return Join(sysfs_, rel); }
std::string NodeFs::Proc(std::string_view rel) const { return Join(procfs_, rel); }

Result<std::string> NodeFs::ReadFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error::FromErrno("open " + path, errno);
  std::string buf;
  std::size_t used = 0;
  Status st = PreadAll(fd, buf, used, /*stop_on_short_read=*/false);
  ::close(fd);
  if (!st.ok()) return Error{"read " + path + st.error().message.substr(4), st.error().errno_value};
  buf.resize(used);
  return buf;
}

Result<std::vector<std::string>> NodeFs::ListDir(const std::string& path) {
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return Error::FromErrno("opendir " + path, errno);
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

Result<std::string> NodeFs::ReadLink(const std::string& path) {
  std::string buf(4096, '\0');
  ssize_t n = ::readlink(path.c_str(), buf.data(), buf.size());
  if (n < 0) return Error::FromErrno("readlink " + path, errno);
  buf.resize(static_cast<std::size_t>(n));
  return buf;
}

bool NodeFs::Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

bool NodeFs::IsLiveSysfsRoot(const std::string& root) {
  std::string_view r = root;
  while (r.size() > 1 && r.back() == '/') r.remove_suffix(1);
  return r == "/sys";
}

bool NodeFs::IsDir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Result<std::string_view> HeldFiles::Read(const std::string& path) {
  auto it = files_.try_emplace(path, path).first;
  Result<std::string_view> r = it->second.Read(buf_);
  if (!r.ok()) files_.erase(it);  // a later call opens it afresh
  return r;
}

void HeldFiles::ForgetPrefix(std::string_view prefix) {
  std::erase_if(files_, [&](const auto& kv) { return std::string_view(kv.first).substr(0, prefix.size()) == prefix; });
}

HeldFile::HeldFile(HeldFile&& other) noexcept
    : dir_(std::move(other.dir_)), name_(std::move(other.name_)), fd_(other.fd_) {
  other.fd_ = -1;
}

HeldFile& HeldFile::operator=(HeldFile&& other) noexcept {
  if (this != &other) {
    Close();
    dir_ = std::move(other.dir_);
    name_ = std::move(other.name_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void HeldFile::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<std::string_view> HeldFile::Read(std::string& buf) {
  if (fd_ < 0) {
    const std::string p = path();
    fd_ = OpenForPolling(p.c_str());
    if (fd_ < 0) return Error::FromErrno("open " + p, errno);
  }
  std::size_t used = 0;
  Status st = PreadAll(fd_, buf, used, /*stop_on_short_read=*/true);
  if (!st.ok()) {
    Close();
    return Error{"read " + path() + st.error().message.substr(4), st.error().errno_value};
  }
  return std::string_view(buf.data(), used);
}

std::uint64_t RaiseOpenFileLimit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
    ::getrlimit(RLIMIT_NOFILE, &rl);
  }
  return rl.rlim_cur;
}

}  // namespace rdmahd
