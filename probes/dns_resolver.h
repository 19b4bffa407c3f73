// DnsResolver: every A and AAAA record of a name, for peer discovery (issue #12): a Kubernetes
// headless Service name resolves to one address per ready pod, and each address is a peer.
// getaddrinfo would do for one address, but it hides the record set's shape and cannot be pointed
// at another server; this asks the resolver library (glibc's res_nquery) directly, with the
// servers of /etc/resolv.conf or one given server (tests start their own on loopback).
//
// Blocking: call it from a probe or discovery thread, never from a scrape. Each query is bounded
// by `timeout` x `attempts` (whole seconds: the resolver library's unit).
#pragma once

#include <chrono>
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

// The addresses of `name` (A then AAAA records), as IP literals, sorted and unique within each
// family. A name with no such record is an empty list, not an error; NXDOMAIN, SERVFAIL, a timeout
// and a malformed answer are errors naming the name and the server.
Result<std::vector<std::string>> ResolveAddresses(std::string_view name, const DnsOptions& options = {});

}  // namespace rdmahd
