// What the probe responder admits, decided before any device work: the peer must be in
// responder.allow, its hello must decode (probes/handshake.h) and ask for no more than the message
// size cap, and the session must fit the caps on sessions and registered memory. Each refusal is a
// ProbeReject whose code and text go back to the prober in the reject's private data.
#pragma once

#include <cstdint>
#include <span>
#include <variant>

#include "common/mutex.h"
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
  void Give(std::uint64_t bytes) EXCLUDES(mu_);
  mutable Mutex mu_;
  std::uint32_t max_sessions_ GUARDED_BY(mu_);
  std::uint64_t max_bytes_ GUARDED_BY(mu_);
  std::uint32_t sessions_ GUARDED_BY(mu_) = 0;
  std::uint64_t bytes_ GUARDED_BY(mu_) = 0;
};

// What a hello costs in registered memory on the responder (page-rounded buffers).
std::uint64_t ResponderBytesFor(const ProbeHello& hello);

// The admission decision for one connect request, without a device: allow list, hello decode,
// message size cap, then the budget. Returns a lease or the reject to send.
std::variant<ResponderBudget::Lease, ProbeReject> AdmitProbe(const AddressAllowList& allow, const sockaddr* peer,
                                                             std::span<const std::uint8_t> private_data,
                                                             std::uint32_t max_message_size, ResponderBudget& budget,
                                                             ProbeHello* hello);

}  // namespace rdmahd
