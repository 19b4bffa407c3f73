// VerbsProvider: what only libibverbs can tell about an RDMA device (ibv_query_device limits and
// ibv_query_port MTUs), behind a small interface so the "verbs" collector is tested with a fake.
//
// The real provider (LibibverbsProvider) owns every libibverbs resource with RAII: the device list
// lives only inside one call, each opened device is a VerbsDeviceHandle that closes its context
// when destroyed. An opened context stays valid after the list is freed (ibv_free_device_list(3):
// "it will be able to use only the open devices"), so handles can be cached across scrapes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "facts/verbs_facts.h"

namespace rdmahd {

// One device as libibverbs lists it. `kernel_index` (ibv_get_device_index) changes when a device is
// removed and re-created under the same name (`rdma link delete rxe0; rdma link add rxe0 ...`), so
// (name, kernel_index) identifies one kernel object; nullopt on kernels without netlink device query.
struct VerbsDeviceId {
  std::string name;  // ibv_get_device_name, e.g. mlx5_0
  std::optional<std::uint32_t> kernel_index;

  bool operator==(const VerbsDeviceId&) const = default;
};

// 1..5 (IBV_MTU_256..IBV_MTU_4096) -> 256..4096; anything else -> nullopt.
std::optional<std::uint32_t> IbvMtuToBytes(int mtu_enum);

// An opened device. Destroying it releases the context (ibv_close_device).
class VerbsDeviceHandle {
 public:
  virtual ~VerbsDeviceHandle() = default;
  // Errors carry the errno libibverbs returned (ENODEV/EIO once the device is gone).
  virtual Result<VerbsDeviceAttrs> QueryDevice() = 0;
  virtual Result<VerbsPortAttrs> QueryPort(std::uint32_t port) = 0;
};

class VerbsProvider {
 public:
  virtual ~VerbsProvider() = default;
  // The devices libibverbs sees now, by name. A node without RDMA support (no ib_uverbs, no
  // provider library) has none: that is an empty list, not an error.
  virtual Result<std::vector<VerbsDeviceId>> ListDevices() = 0;
  // Opens one device. Errors name the device and its uverbs character device when known, with
  // errno (EACCES on /dev/infiniband/uverbsN in a container, ENOENT when the device node is missing,
  // ENODEV when the device is gone).
  virtual Result<std::unique_ptr<VerbsDeviceHandle>> Open(const VerbsDeviceId& id) = 0;
};

// The real thing: ibv_get_device_list / ibv_open_device / ibv_query_device / ibv_query_port /
// ibv_close_device.
std::unique_ptr<VerbsProvider> MakeLibibverbsProvider();

}  // namespace rdmahd
