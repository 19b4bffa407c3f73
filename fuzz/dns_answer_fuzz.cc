// libFuzzer target: the DNS answer parser (ParseDnsAnswer, probes/dns_resolver.h), which reads what
// any DNS server on the path answers for a discovery name. The input is one byte choosing the
// question ("svc.test" A when even, AAAA when odd), then the response message as res_nquery fills
// it in. Invariants: no read
// outside the message (ASan); an accepted answer starts its chain at the name asked, follows at
// most kMaxCnameChain CNAMEs and never revisits a name, and holds only IP literals of the asked
// family; every name and message is printable ASCII of bounded length.
#include <arpa/inet.h>

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "probes/dns_resolver.h"

namespace {

bool Printable(const std::string& s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7E) return false;
  }
  return true;
}

std::string Lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool v4 = data[0] % 2 == 0;
  // The message on the heap, exactly its size: a read past it is an ASan report.
  const std::vector<unsigned char> message(data + 1, data + size);
  const auto type = v4 ? rdmahd::DnsAddressType::kA : rdmahd::DnsAddressType::kAaaa;
  auto parsed = rdmahd::ParseDnsAnswer(message.data(), message.size(), "svc.test", type);
  if (!parsed.ok()) {
    const std::string& m = parsed.error().message;
    if (m.rfind("dns: ", 0) != 0 || !Printable(m) || m.size() > 1024) __builtin_trap();
    return 0;
  }
  const std::vector<std::string>& chain = parsed->chain;
  if (chain.empty() || chain.front() != "svc.test" || chain.size() > rdmahd::kMaxCnameChain + 1) __builtin_trap();
  std::set<std::string> seen;
  for (const std::string& name : chain) {
    if (name.empty() || !Printable(name) || name.find(' ') != std::string::npos) __builtin_trap();
    if (name.size() > 4 * 255) __builtin_trap();  // 255 wire bytes, each at most \DDD
    if (!seen.insert(Lower(name)).second) __builtin_trap();
  }
  for (const std::string& a : parsed->addresses) {
    unsigned char bytes[16];
    if (inet_pton(v4 ? AF_INET : AF_INET6, a.c_str(), bytes) != 1) __builtin_trap();
  }
  return 0;
}
