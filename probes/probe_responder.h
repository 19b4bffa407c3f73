// ProbeResponder: the daemon's side of peer probes. A listener thread accepts rdma_cm connect
// requests on responder.port, admits only peers in responder.allow, decodes the hello
// (probes/handshake.h) and checks it against the caps (sessions, message size, registered memory);
// anything refused gets a reject whose private data says why. An admitted peer gets a session
// thread that answers the ping-pong (latency) or exposes a buffer for RDMA WRITEs (bandwidth),
// bounded in time whatever the peer does (slow, silent, gone, garbage), and tears everything down.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "common/result.h"
#include "config/config.h"
#include "probes/address_allow_list.h"
#include "probes/handshake.h"

struct sockaddr;

namespace rdmahd {

// Sessions and registered bytes in use, against the caps. Thread-safe. A Lease gives its share back
// when destroyed; the budget must outlive its leases.
class ResponderBudget {
 public:
  ResponderBudget(std::uint32_t max_sessions, std::uint64_t max_registered_bytes);

  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& o) noexcept;
    Lease& operator=(Lease&& o) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();
    std::uint64_t bytes() const { return bytes_; }

   private:
    friend class ResponderBudget;
    Lease(ResponderBudget* budget, std::uint64_t bytes) : budget_(budget), bytes_(bytes) {}
    void Release();
    ResponderBudget* budget_ = nullptr;
    std::uint64_t bytes_ = 0;
  };

  // One more session registering `bytes`, or the reject that says which cap stops it.
  std::variant<Lease, ProbeReject> Admit(std::uint64_t bytes);
  void SetCaps(std::uint32_t max_sessions, std::uint64_t max_registered_bytes);
  std::uint32_t sessions() const;
  std::uint64_t registered_bytes() const;

 private:
  void Give(std::uint64_t bytes);
  mutable std::mutex mu_;
  std::uint32_t max_sessions_;
  std::uint64_t max_bytes_;
  std::uint32_t sessions_ = 0;
  std::uint64_t bytes_ = 0;
};

// What a hello costs in registered memory on the responder (page-rounded buffers).
std::uint64_t ResponderBytesFor(const ProbeHello& hello);

// The admission decision for one connect request, without a device: allow list, hello decode,
// message size cap, then the budget. Returns a lease or the reject to send.
std::variant<ResponderBudget::Lease, ProbeReject> AdmitProbe(const AddressAllowList& allow, const sockaddr* peer,
                                                             std::span<const std::uint8_t> private_data,
                                                             std::uint32_t max_message_size, ResponderBudget& budget,
                                                             ProbeHello* hello);

class ProbeResponder {
 public:
  // Binds and listens (errors: bad listen address, port in use, no RDMA device) and starts the
  // listener thread.
  static Result<std::unique_ptr<ProbeResponder>> Start(const PeerResponderPolicy& policy);
  // Stops accepting, ends every session (each within ~100 ms) and joins every thread.
  ~ProbeResponder();
  ProbeResponder(const ProbeResponder&) = delete;
  ProbeResponder& operator=(const ProbeResponder&) = delete;

  // True when `next` can be applied in place (same address and port): allow list and caps change
  // for new sessions; running sessions keep their leases.
  bool CanApplyInPlace(const PeerResponderPolicy& next) const;
  Status Apply(const PeerResponderPolicy& next);

  std::uint64_t sessions_accepted() const;
  std::uint32_t active_sessions() const;  // holding a lease (set up, running or tearing down)
  std::uint64_t sessions_rejected() const;

  struct Impl;

 private:
  explicit ProbeResponder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmahd
