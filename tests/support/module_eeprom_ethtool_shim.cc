// Test support, loaded with LD_PRELOAD into Debian's ethtool: makes `ethtool -m rdmahdfake0` decode
// module EEPROM bytes from a file, so the module_eeprom tests compare this project's decoder with
// ethtool's own on the same bytes (ethtool has no offline mode for -m). Netlink sockets fail
// (EPROTONOSUPPORT), so ethtool takes its ioctl path; SIOCETHTOOL on the fake interface answers
// ETHTOOL_GMODULEINFO and ETHTOOL_GMODULEEEPROM from RDMAHD_FAKE_MODULE_EEPROM (the flat dump) and
// RDMAHD_FAKE_MODULE_TYPE (ETH_MODULE_SFF_8472 and so on, as a number). Every other call goes to
// libc. Built without sanitizers: it runs inside an uninstrumented ethtool.
#include <dlfcn.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr char kFakeInterface[] = "rdmahdfake0";

std::vector<unsigned char> FakeEeprom() {
  std::vector<unsigned char> out;
  const char* path = std::getenv("RDMAHD_FAKE_MODULE_EEPROM");
  if (path == nullptr) return out;
  std::FILE* f = std::fopen(path, "rb");
  if (f == nullptr) return out;
  unsigned char buf[4096];
  const std::size_t n = std::fread(buf, 1, sizeof(buf), f);
  std::fclose(f);
  out.assign(buf, buf + n);
  return out;
}

int Answer(ifreq* ifr) {
  const std::vector<unsigned char> eeprom = FakeEeprom();
  const char* type = std::getenv("RDMAHD_FAKE_MODULE_TYPE");
  std::uint32_t cmd = 0;
  std::memcpy(&cmd, ifr->ifr_data, sizeof(cmd));
  if (eeprom.empty() || type == nullptr) {
    errno = ENODEV;
    return -1;
  }
  if (cmd == ETHTOOL_GMODULEINFO) {
    ethtool_modinfo info{};
    std::memcpy(&info, ifr->ifr_data, sizeof(info));
    info.type = static_cast<std::uint32_t>(std::atoi(type));
    info.eeprom_len = static_cast<std::uint32_t>(eeprom.size());
    std::memcpy(ifr->ifr_data, &info, sizeof(info));
    return 0;
  }
  if (cmd == ETHTOOL_GMODULEEEPROM) {
    ethtool_eeprom request{};
    std::memcpy(&request, ifr->ifr_data, sizeof(request));
    if (request.offset > eeprom.size() || request.len > eeprom.size() - request.offset) {
      errno = EINVAL;
      return -1;
    }
    std::memcpy(ifr->ifr_data + sizeof(request), eeprom.data() + request.offset, request.len);
    return 0;
  }
  errno = EOPNOTSUPP;
  return -1;
}

}  // namespace

extern "C" int socket(int domain, int type, int protocol) {
  using SocketFn = int (*)(int, int, int);
  static auto real = reinterpret_cast<SocketFn>(dlsym(RTLD_NEXT, "socket"));
  if (domain == AF_NETLINK) {
    errno = EPROTONOSUPPORT;
    return -1;
  }
  return real(domain, type, protocol);
}

extern "C" int ioctl(int fd, unsigned long request, ...) {
  va_list ap;
  va_start(ap, request);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  using IoctlFn = int (*)(int, unsigned long, void*);
  static auto real = reinterpret_cast<IoctlFn>(dlsym(RTLD_NEXT, "ioctl"));
  if (request == SIOCETHTOOL && arg != nullptr) {
    auto* ifr = static_cast<ifreq*>(arg);
    if (std::strncmp(ifr->ifr_name, kFakeInterface, IFNAMSIZ) == 0) return Answer(ifr);
  }
  return real(fd, request, arg);
}
