// DnsResolver: every A and AAAA record of a name, for peer discovery: a Kubernetes
// headless Service name resolves to one address per ready pod, and each address is a peer.
// getaddrinfo would do for one address, but it hides the record set's shape and cannot be pointed
// at another server; this asks the resolver library (glibc's res_nquery) directly, with the
// servers of /etc/resolv.conf or one given server (tests start their own on loopback).
//
// Blocking: call it from a probe or discovery thread, never from a scrape. Each query is bounded
// by `timeout` x `attempts` (whole seconds: the resolver library's unit).
//
// Answers are hostile input. Any DNS message fits the answer buffer (65,535 bytes, the most a
// message over TCP can hold: a Service of ~4,000 pods is one answer); a length the library reports
// beyond the buffer is refused, never parsed, and the parser is the project's own, bounds-checked
// and fuzzed. Only the records of the name asked, or of the end of its CNAME chain, count.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace rdmahd {

struct DnsOptions {
  // "IP:PORT" ("127.0.0.1:5353", "[::1]:5353") or "IP" (port 53); empty = /etc/resolv.conf.
  std::string server;
  std::chrono::seconds timeout{2};
  int attempts = 2;
};

// The largest DNS message: TCP frames a message with a 16-bit length.
inline constexpr std::size_t kMaxDnsMessageBytes = 65535;
// The most CNAMEs followed from the name asked to the name holding the addresses.
inline constexpr std::size_t kMaxCnameChain = 16;

// The addresses of `name` (A then AAAA records), as IP literals, sorted and unique within each
// family. A name with no such record and no alias is an empty list, not an error. NXDOMAIN,
// SERVFAIL, a timeout and a malformed answer are errors naming the name and the server, and so is
// an alias that leads nowhere: a CNAME loop, a chain of more than kMaxCnameChain CNAMEs, or a
// chain whose last name has neither an A nor an AAAA record.
Result<std::vector<std::string>> ResolveAddresses(std::string_view name, const DnsOptions& options = {});

enum class DnsAddressType { kA, kAaaa };

// What one answer to "`name` A" (or AAAA) says.
struct DnsAnswer {
  std::vector<std::string> addresses;  // of the asked type, owned by the end of the chain, as IP literals
  std::vector<std::string> chain;      // the names from `name` to the one holding the addresses; one: no alias
};

// Parses the header, question and answer section of a DNS response of `size` bytes (the bytes
// res_nquery filled in), reading no byte outside them. Its question must be `name` (compared
// case-insensitively; a trailing dot on `name` is ignored); CNAME records are followed from there,
// and only records of the asked type owned by the chain's last name count (records of other names
// are ignored, as getaddrinfo ignores them). Errors: a malformed or truncated (TC) message, a bad
// record or name (compression pointers must lead back, names hold at most 255 bytes), an answer to
// another question, a CNAME loop, a chain of more than kMaxCnameChain. Names from the message are
// escaped in errors (\DDD) and shortened. Total over every input (fuzz/dns_answer_fuzz.cc).
Result<DnsAnswer> ParseDnsAnswer(const unsigned char* message, std::size_t size, std::string_view name,
                                 DnsAddressType type);

}  // namespace rdmahd
