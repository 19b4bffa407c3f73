#include "probes/responder_admission.h"

#include <string>
#include <utility>

#include "probes/rdma_cm_connection.h"

namespace rdmahd {
namespace {

constexpr std::uint64_t kPage = 4096;

std::uint64_t PageRound(std::uint64_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

}  // namespace

ResponderBudget::ResponderBudget(std::uint32_t max_sessions, std::uint64_t max_registered_bytes)
    : max_sessions_(max_sessions), max_bytes_(max_registered_bytes) {}

ResponderBudget::Lease::Lease(Lease&& o) noexcept
    : budget_(std::exchange(o.budget_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
ResponderBudget::Lease& ResponderBudget::Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    Release();
    budget_ = std::exchange(o.budget_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}
ResponderBudget::Lease::~Lease() { Release(); }
void ResponderBudget::Lease::Release() {
  if (ResponderBudget* b = std::exchange(budget_, nullptr)) b->Give(std::exchange(bytes_, 0));
}

std::variant<ResponderBudget::Lease, ProbeReject> ResponderBudget::Admit(std::uint64_t bytes) {
  MutexLock lock(mu_);
  if (sessions_ >= max_sessions_)
    return ProbeReject{RejectCode::kBusy, "sessions at the cap (" + std::to_string(max_sessions_) + ")"};
  if (bytes > max_bytes_ || bytes_ + bytes > max_bytes_)
    return ProbeReject{RejectCode::kNoMemory, "registered memory cap (" + std::to_string(max_bytes_) + " bytes) reached"};
  ++sessions_;
  bytes_ += bytes;
  return Lease(this, bytes);
}

void ResponderBudget::Give(std::uint64_t bytes) {
  MutexLock lock(mu_);
  --sessions_;
  bytes_ -= bytes;
}

void ResponderBudget::SetCaps(std::uint32_t max_sessions, std::uint64_t max_registered_bytes) {
  MutexLock lock(mu_);
  max_sessions_ = max_sessions;
  max_bytes_ = max_registered_bytes;
}
std::uint32_t ResponderBudget::sessions() const {
  MutexLock lock(mu_);
  return sessions_;
}
std::uint64_t ResponderBudget::registered_bytes() const {
  MutexLock lock(mu_);
  return bytes_;
}

std::uint64_t ResponderBytesFor(const ProbeHello& hello) {
  // Latency: a send and a receive half; bandwidth: the buffer the peer writes into.
  const std::uint64_t size = hello.message_size;
  return PageRound(hello.kind == ProbeKind::kLatency ? 2 * size : size);
}

std::variant<ResponderBudget::Lease, ProbeReject> AdmitProbe(const AddressAllowList& allow, const sockaddr* peer,
                                                             std::span<const std::uint8_t> private_data,
                                                             std::uint32_t max_message_size, ResponderBudget& budget,
                                                             ProbeHello* hello) {
  if (!allow.Allows(peer)) return ProbeReject{RejectCode::kNotAllowed, SockAddrText(peer) + " is not in responder.allow"};
  Result<ProbeHello> decoded = DecodeHello(private_data);
  if (!decoded.ok()) return ProbeReject{RejectCode::kBadHandshake, decoded.error().message};
  if (decoded->message_size > max_message_size)
    return ProbeReject{RejectCode::kTooLarge, "message size " + std::to_string(decoded->message_size) + " over " +
                                                  std::to_string(max_message_size)};
  *hello = *decoded;
  return budget.Admit(ResponderBytesFor(*decoded));
}

}  // namespace rdmahd
