#include "collectors/rdma_netdevs.h"

#include "common/parse.h"

namespace rdmahd {

std::vector<RdmaNetdev> FallbackNetdevs(const NodeFs& fs, const std::string& device, const std::string& dev_dir,
                                        const std::vector<int>& unresolved, std::size_t port_count, FsWork& work) {
  std::vector<RdmaNetdev> out;
  if (unresolved.empty()) return out;
  ++work.listings;
  auto nets = fs.ListDir(dev_dir + "/device/net");
  if (!nets) return out;
  for (const std::string& net : *nets) {
    std::optional<std::uint64_t> dev_port;
    ++work.opens;
    if (auto text = fs.ReadFile(dev_dir + "/device/net/" + net + "/dev_port")) dev_port = ParseU64(*text);
    for (int port : unresolved) {
      bool belongs = dev_port ? static_cast<int>(*dev_port) == port - 1 : port_count == 1;
      if (belongs) out.push_back({device, port, net});
    }
  }
  return out;
}

}  // namespace rdmahd
