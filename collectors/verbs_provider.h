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

namespace rdmahd {

// One device as libibverbs lists it. `kernel_index` (ibv_get_device_index) changes when a device is
// removed and re-created under the same name (`rdma link delete rxe0; rdma link add rxe0 ...`), so
// (name, kernel_index) identifies one kernel object; nullopt on kernels without netlink device query.
struct VerbsDeviceId {
  std::string name;  // ibv_get_device_name, e.g. mlx5_0
  std::optional<std::uint32_t> kernel_index;

  bool operator==(const VerbsDeviceId&) const = default;
};

// The ibv_query_device limits operators size jobs by. They are fixed for the life of a device.
struct VerbsDeviceAttrs {
  std::uint64_t max_mr_size = 0;  // bytes one memory region may span
  std::uint32_t max_qp = 0;
  std::uint32_t max_qp_wr = 0;    // work requests per send/receive queue
  std::uint32_t max_sge = 0;      // scatter/gather entries per work request
  std::uint32_t max_cq = 0;
  std::uint32_t max_cqe = 0;      // entries per completion queue
  std::uint32_t max_mr = 0;
  std::uint32_t max_pd = 0;
  std::uint32_t max_srq = 0;
  std::uint32_t max_srq_wr = 0;
  std::uint32_t max_qp_rd_atom = 0;  // outstanding RDMA reads/atomics a QP may have as responder
  std::uint32_t phys_port_cnt = 0;
};

// ibv_query_port, converted: MTU enums to bytes, everything else as the kernel reports it.
struct VerbsPortAttrs {
  std::uint32_t port = 0;
  std::uint32_t state = 0;  // enum ibv_port_state: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER
  std::optional<std::uint32_t> active_mtu_bytes;  // nullopt when the enum is not 1..5
  std::optional<std::uint32_t> max_mtu_bytes;
  std::uint32_t gid_tbl_len = 0;
  std::uint32_t max_msg_sz = 0;  // bytes
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
