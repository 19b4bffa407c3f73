// The probe handshake: what a prober and a responder tell each other in rdma_cm's connect, accept
// and reject private data. Versioned and strictly decoded: the responder takes these bytes from
// any host that can reach its port, so a decoder that guesses would be an attack surface.
//
// Wire format (all integers big-endian). Every message starts with the same 8-byte header:
//   magic u32 = 0x52485042 ("RHPB"), version u8 = 1, type u8, u16 type-specific
// Hello  (type 1, prober -> responder, connect private data; 56 bytes are all rdma_cm leaves of
//        an IB/RoCE REQ, so it stays at 24):
//   header(kind u8, reserved u8 = 0), message_size u32, iterations u32 (latency), duration_ms u32
//   and queue_depth u32 (bandwidth; zero for latency)
// Accept (type 2, responder -> prober, accept private data):
//   header(kind u8, reserved u8 = 0), message_size u32, rkey u32, addr u64 (bandwidth: where
//   the prober writes; zero for latency)
// Reject (type 3, responder -> prober, reject private data):
//   header(code u8, text length u8), text (printable ASCII, <= kMaxRejectText bytes)
// The transport pads private data with zeros up to its own size (56 bytes for a REQ on the passive
// side), so bytes after a message must be zero; anything else is refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace rdmahd {

inline constexpr std::uint32_t kHandshakeMagic = 0x52485042;  // "RHPB"
inline constexpr std::uint8_t kHandshakeVersion = 1;
inline constexpr std::size_t kHelloBytes = 24;
inline constexpr std::size_t kAcceptBytes = 24;
inline constexpr std::size_t kMaxRejectText = 120;  // 8 + 120 < 148, an IB REJ's private data
// Sanity bounds on what a hello may ask for, whatever the responder's own caps say.
inline constexpr std::uint32_t kMaxLatencyIterations = 1'000'000;
inline constexpr std::uint32_t kMaxBandwidthDurationMs = 60'000;
inline constexpr std::uint32_t kMaxBandwidthQueueDepth = 4096;

enum class ProbeKind : std::uint8_t { kLatency = 1, kBandwidth = 2 };
std::string_view ProbeKindName(ProbeKind kind);

struct ProbeHello {
  ProbeKind kind = ProbeKind::kLatency;
  std::uint32_t message_size = 0;
  std::uint32_t iterations = 0;   // latency only
  std::uint32_t duration_ms = 0;  // bandwidth only
  std::uint32_t queue_depth = 0;  // bandwidth only
  bool operator==(const ProbeHello&) const = default;
};

struct ProbeAccept {
  ProbeKind kind = ProbeKind::kLatency;
  std::uint32_t message_size = 0;
  std::uint32_t rkey = 0;
  std::uint64_t addr = 0;
  bool operator==(const ProbeAccept&) const = default;
};

// Why a responder refused. The code is what a prober acts on; the text is for the operator.
enum class RejectCode : std::uint8_t {
  kNotAllowed = 1,     // the peer's address is not in responder.allow
  kBusy = 2,           // responder.max_sessions reached
  kTooLarge = 3,       // message size over responder.max_message_size
  kNoMemory = 4,       // responder.max_registered_bytes would be exceeded
  kBadHandshake = 5,   // the hello did not decode
  kInternal = 6,       // the responder could not set up the session
};
std::string_view RejectCodeName(RejectCode code);

struct ProbeReject {
  RejectCode code = RejectCode::kInternal;
  std::string text;
  bool operator==(const ProbeReject&) const = default;
};

std::vector<std::uint8_t> EncodeHello(const ProbeHello& hello);
std::vector<std::uint8_t> EncodeAccept(const ProbeAccept& accept);
// Text longer than kMaxRejectText is cut; non-printable bytes become '?'.
std::vector<std::uint8_t> EncodeReject(const ProbeReject& reject);

// Each refuses, with the reason in the Error, anything that is not exactly one well-formed message
// of its type followed only by zero padding.
Result<ProbeHello> DecodeHello(std::span<const std::uint8_t> bytes);
Result<ProbeAccept> DecodeAccept(std::span<const std::uint8_t> bytes);
Result<ProbeReject> DecodeReject(std::span<const std::uint8_t> bytes);

}  // namespace rdmahd
