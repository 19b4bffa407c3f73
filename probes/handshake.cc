#include "probes/handshake.h"

#include <algorithm>

namespace rdmahd {
namespace {

constexpr std::uint8_t kTypeHello = 1;
constexpr std::uint8_t kTypeAccept = 2;
constexpr std::uint8_t kTypeReject = 3;
constexpr std::size_t kHeaderBytes = 8;

void Put32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(v >> shift));
}
void Put64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  Put32(out, static_cast<std::uint32_t>(v >> 32));
  Put32(out, static_cast<std::uint32_t>(v));
}
std::uint32_t Get32(std::span<const std::uint8_t> b, std::size_t at) {
  return (std::uint32_t{b[at]} << 24) | (std::uint32_t{b[at + 1]} << 16) | (std::uint32_t{b[at + 2]} << 8) |
         std::uint32_t{b[at + 3]};
}
std::uint64_t Get64(std::span<const std::uint8_t> b, std::size_t at) {
  return (std::uint64_t{Get32(b, at)} << 32) | Get32(b, at + 4);
}

std::vector<std::uint8_t> Header(std::uint8_t type, std::uint8_t a, std::uint8_t b) {
  std::vector<std::uint8_t> out;
  out.reserve(32);
  Put32(out, kHandshakeMagic);
  out.push_back(kHandshakeVersion);
  out.push_back(type);
  out.push_back(a);
  out.push_back(b);
  return out;
}

Error Refuse(std::string_view what, std::string_view why) {
  return Error{std::string("probe handshake: ") + std::string(what) + ": " + std::string(why)};
}

// The checks every message shares: length, magic, version, type, and zero padding after `used`.
Status CheckFrame(std::span<const std::uint8_t> b, std::uint8_t type, std::size_t used, std::string_view what) {
  if (b.size() < kHeaderBytes) return Refuse(what, "too short (" + std::to_string(b.size()) + " bytes)");
  if (Get32(b, 0) != kHandshakeMagic) return Refuse(what, "bad magic (not a rdma-healthd probe)");
  if (b[4] != kHandshakeVersion) return Refuse(what, "unsupported version " + std::to_string(b[4]));
  if (b[5] != type) return Refuse(what, "unexpected message type " + std::to_string(b[5]));
  if (b.size() < used) return Refuse(what, "truncated (" + std::to_string(b.size()) + " of " + std::to_string(used) + " bytes)");
  if (!std::all_of(b.begin() + static_cast<std::ptrdiff_t>(used), b.end(), [](std::uint8_t c) { return c == 0; }))
    return Refuse(what, "non-zero bytes after the message");
  return Status::Ok();
}

Result<ProbeKind> DecodeKind(std::uint8_t v, std::string_view what) {
  if (v == static_cast<std::uint8_t>(ProbeKind::kLatency)) return ProbeKind::kLatency;
  if (v == static_cast<std::uint8_t>(ProbeKind::kBandwidth)) return ProbeKind::kBandwidth;
  return Refuse(what, "unknown probe kind " + std::to_string(v));
}

}  // namespace

std::string_view ProbeKindName(ProbeKind kind) {
  return kind == ProbeKind::kLatency ? "latency" : "bandwidth";
}

std::string_view RejectCodeName(RejectCode code) {
  switch (code) {
    case RejectCode::kNotAllowed: return "not_allowed";
    case RejectCode::kBusy: return "busy";
    case RejectCode::kTooLarge: return "too_large";
    case RejectCode::kNoMemory: return "no_memory";
    case RejectCode::kBadHandshake: return "bad_handshake";
    case RejectCode::kInternal: return "internal";
  }
  return "unknown";
}

std::vector<std::uint8_t> EncodeHello(const ProbeHello& h) {
  std::vector<std::uint8_t> out = Header(kTypeHello, static_cast<std::uint8_t>(h.kind), 0);
  Put32(out, h.message_size);
  Put32(out, h.iterations);
  Put32(out, h.duration_ms);
  Put32(out, h.queue_depth);
  return out;
}

std::vector<std::uint8_t> EncodeAccept(const ProbeAccept& a) {
  std::vector<std::uint8_t> out = Header(kTypeAccept, static_cast<std::uint8_t>(a.kind), 0);
  Put32(out, a.message_size);
  Put32(out, a.rkey);
  Put64(out, a.addr);
  return out;
}

std::vector<std::uint8_t> EncodeReject(const ProbeReject& r) {
  const std::size_t n = std::min(r.text.size(), kMaxRejectText);
  std::vector<std::uint8_t> out = Header(kTypeReject, static_cast<std::uint8_t>(r.code), static_cast<std::uint8_t>(n));
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(r.text[i]);
    out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  }
  return out;
}

Result<ProbeHello> DecodeHello(std::span<const std::uint8_t> b) {
  if (Status s = CheckFrame(b, kTypeHello, kHelloBytes, "hello"); !s.ok()) return s.error();
  Result<ProbeKind> kind = DecodeKind(b[6], "hello");
  if (!kind.ok()) return kind.error();
  if (b[7] != 0) return Refuse("hello", "reserved byte not zero");
  ProbeHello h{*kind, Get32(b, 8), Get32(b, 12), Get32(b, 16), Get32(b, 20)};
  if (h.message_size == 0) return Refuse("hello", "message size 0");
  if (h.kind == ProbeKind::kLatency) {
    if (h.iterations < 2 || h.iterations > kMaxLatencyIterations)
      return Refuse("hello", "latency iterations " + std::to_string(h.iterations) + " outside 2.." +
                                 std::to_string(kMaxLatencyIterations));
    if (h.duration_ms != 0 || h.queue_depth != 0) return Refuse("hello", "bandwidth fields set in a latency hello");
  } else {
    if (h.iterations != 0) return Refuse("hello", "iterations set in a bandwidth hello");
    if (h.duration_ms == 0 || h.duration_ms > kMaxBandwidthDurationMs)
      return Refuse("hello", "bandwidth duration " + std::to_string(h.duration_ms) + " ms outside 1.." +
                                 std::to_string(kMaxBandwidthDurationMs));
    if (h.queue_depth == 0 || h.queue_depth > kMaxBandwidthQueueDepth)
      return Refuse("hello", "queue depth " + std::to_string(h.queue_depth) + " outside 1.." +
                                 std::to_string(kMaxBandwidthQueueDepth));
  }
  return h;
}

Result<ProbeAccept> DecodeAccept(std::span<const std::uint8_t> b) {
  if (Status s = CheckFrame(b, kTypeAccept, kAcceptBytes, "accept"); !s.ok()) return s.error();
  Result<ProbeKind> kind = DecodeKind(b[6], "accept");
  if (!kind.ok()) return kind.error();
  if (b[7] != 0) return Refuse("accept", "reserved byte not zero");
  ProbeAccept a{*kind, Get32(b, 8), Get32(b, 12), Get64(b, 16)};
  if (a.message_size == 0) return Refuse("accept", "message size 0");
  if (a.kind == ProbeKind::kBandwidth && a.addr == 0) return Refuse("accept", "bandwidth accept without a buffer address");
  if (a.kind == ProbeKind::kLatency && (a.rkey != 0 || a.addr != 0))
    return Refuse("accept", "latency accept with a remote buffer");
  return a;
}

Result<ProbeReject> DecodeReject(std::span<const std::uint8_t> b) {
  if (b.size() < kHeaderBytes) return Refuse("reject", "too short (" + std::to_string(b.size()) + " bytes)");
  const std::size_t n = b[7];
  if (n > kMaxRejectText) return Refuse("reject", "text length " + std::to_string(n) + " over " + std::to_string(kMaxRejectText));
  if (Status s = CheckFrame(b, kTypeReject, kHeaderBytes + n, "reject"); !s.ok()) return s.error();
  if (b[6] < static_cast<std::uint8_t>(RejectCode::kNotAllowed) || b[6] > static_cast<std::uint8_t>(RejectCode::kInternal))
    return Refuse("reject", "unknown code " + std::to_string(b[6]));
  ProbeReject r{static_cast<RejectCode>(b[6]), {}};
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t c = b[kHeaderBytes + i];
    if (c < 0x20 || c >= 0x7f) return Refuse("reject", "non-printable text");
    r.text.push_back(static_cast<char>(c));
  }
  return r;
}

}  // namespace rdmahd
