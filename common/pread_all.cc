#include "common/pread_all.h"

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace rdmahd {
namespace {

// pread(2) without glibc's cancellation-point wrapper. In a multi-threaded process glibc's pread
// switches the thread to asynchronous cancellation and back around the system call; the daemon
// cancels no thread, and a scrape makes thousands of these reads, each paying the two switches for
// nothing (bench/scrape_bench.py measures a scrape's CPU, split by thread).
ssize_t PreadNoCancel(int fd, void* buf, std::size_t count, off_t offset) {
  return ::syscall(SYS_pread64, fd, buf, count, offset);
}

}  // namespace

std::string CapText(std::size_t bytes) {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  if (bytes != 0 && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + " MiB";
  return std::to_string(bytes) + " bytes";
}

Status PreadAll(int fd, std::string& buf, std::size_t& used_out, bool stop_on_short_read, std::size_t max_bytes) {
  if (buf.size() < 4096) buf.resize(4096);
  std::size_t used = 0;
  for (;;) {
    ssize_t n = PreadNoCancel(fd, buf.data() + used, buf.size() - used, static_cast<off_t>(used));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno("read", errno);
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
    if (used > max_bytes) return Error{"read: larger than " + CapText(max_bytes) + ", the cap for this file", EFBIG};
    if (used < buf.size()) {
      if (stop_on_short_read) break;
      continue;
    }
    buf.resize(std::min(buf.size() * 2, max_bytes + 1));
  }
  used_out = used;
  return Status::Ok();
}

Error ReadError(const std::string& path, const Error& e) {
  return Error{"read " + path + e.message.substr(4), e.errno_value};
}

}  // namespace rdmahd
