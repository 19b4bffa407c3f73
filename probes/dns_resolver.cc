#include "probes/dns_resolver.h"

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <netdb.h>
#include <netinet/in.h>
#include <resolv.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "common/parse.h"

namespace rdmahd {
namespace {

// Owns a resolver state (res_nclose on every path).
class ResolverState {
 public:
  ResolverState() { std::memset(&state_, 0, sizeof state_); }
  ~ResolverState() {
    if (open_) res_nclose(&state_);
  }
  ResolverState(const ResolverState&) = delete;
  ResolverState& operator=(const ResolverState&) = delete;

  Status Init(const DnsOptions& options) {
    if (res_ninit(&state_) != 0) return Error{"dns: cannot initialise the resolver (res_ninit)"};
    open_ = true;
    state_.retrans = static_cast<int>(std::max<std::int64_t>(1, options.timeout.count()));
    state_.retry = std::max(1, options.attempts);
    if (options.server.empty()) return Status::Ok();
    // One given server: IPv4 goes in nsaddr_list; IPv6 needs the extended list glibc keeps in
    // _u._ext, so IPv6 servers are refused rather than half-supported.
    std::string host = options.server;
    std::uint16_t port = 53;
    if (auto colon = host.rfind(':'); colon != std::string::npos && host.find(':') == colon) {
      auto p = ParseU64(std::string_view(host).substr(colon + 1));
      if (!p || *p == 0 || *p > 65535) return Error{"dns: bad port in server " + options.server};
      port = static_cast<std::uint16_t>(*p);
      host.resize(colon);
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
      return Error{"dns: server must be an IPv4 address with an optional :port, got " + options.server};
    }
    state_.nsaddr_list[0] = addr;
    state_.nscount = 1;
    return Status::Ok();
  }

  res_state get() { return &state_; }

 private:
  struct __res_state state_;
  bool open_ = false;
};

std::string Describe(const DnsOptions& options) {
  return options.server.empty() ? "the servers of /etc/resolv.conf" : options.server;
}

// Names in messages come from answers, in presentation form (MessageReader::Name escapes every
// byte that is not printable, and spaces), so only their length needs a bound.
constexpr std::size_t kShownNameBytes = 80;

std::string Shown(std::string_view name) {
  if (name.size() <= kShownNameBytes) return std::string(name);
  return std::string(name.substr(0, kShownNameBytes)) + "...(" + std::to_string(name.size()) + " bytes)";
}

// "a -> b -> c", at most four names (the first two, then the last).
std::string ChainText(const std::vector<std::string>& chain) {
  std::string out;
  for (std::size_t i = 0; i < chain.size(); ++i) {
    if (chain.size() > 4 && i >= 2 && i + 1 < chain.size()) {
      if (i == 2) out += " -> ...";
      continue;
    }
    if (!out.empty()) out += " -> ";
    out += Shown(chain[i]);
  }
  return out;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string_view WithoutTrailingDot(std::string_view name) {
  if (name.size() > 1 && name.back() == '.') name.remove_suffix(1);
  return name;
}

// DNS wire format (RFC 1035 4.1), read with every byte checked against the message's size: the
// answer is hostile input, and libresolv's own parser (ns_initparse) is not built with the
// sanitizers or the fuzzer's coverage.
constexpr std::uint16_t kTypeA = 1;
constexpr std::uint16_t kTypeCname = 5;
constexpr std::uint16_t kTypeAaaa = 28;
constexpr std::uint16_t kClassIn = 1;
constexpr std::uint16_t kFlagTruncated = 0x0200;
constexpr std::size_t kMaxNameWireBytes = 255;
// Compression pointers followed in one name at most: a name has at most 127 labels, so more is a
// loop (pointers into each other) or a message built to burn CPU.
constexpr int kMaxNamePointers = 128;

class MessageReader {
 public:
  MessageReader(const unsigned char* message, std::size_t size, std::size_t offset = 0)
      : m_(message), size_(size), at_(offset) {}
  std::size_t offset() const { return at_; }
  std::size_t left() const { return at_ <= size_ ? size_ - at_ : 0; }
  bool Skip(std::size_t n) {
    if (n > left()) return false;
    at_ += n;
    return true;
  }
  bool U16(std::uint16_t& v) {
    if (left() < 2) return false;
    v = static_cast<std::uint16_t>((m_[at_] << 8) | m_[at_ + 1]);
    at_ += 2;
    return true;
  }
  // A possibly compressed name, in presentation form as ns_name_ntop writes it ("a.b", "." for the
  // root; special characters escaped with a backslash, bytes outside 0x21..0x7E as \DDD), so that
  // a name prints as one line of ASCII. Moves past the name as it is in place.
  bool Name(std::string& out) {
    out.clear();
    std::size_t pos = at_;
    std::size_t wire = 1;  // the root label
    int pointers = 0;
    bool jumped = false;
    for (;;) {
      if (pos >= size_) return false;
      const unsigned char len = m_[pos];
      if ((len & 0xC0) == 0xC0) {
        if (pos + 1 >= size_ || ++pointers > kMaxNamePointers) return false;
        const std::size_t target = (static_cast<std::size_t>(len & 0x3F) << 8) | m_[pos + 1];
        if (target >= pos) return false;  // pointers lead back, to a prior occurrence
        if (!jumped) at_ = pos + 2;
        jumped = true;
        pos = target;
        continue;
      }
      if ((len & 0xC0) != 0) return false;  // the 0x40 and 0x80 label types are not in use
      if (len == 0) {
        if (!jumped) at_ = pos + 1;
        break;
      }
      wire += 1 + len;
      if (wire > kMaxNameWireBytes || len > size_ - pos - 1) return false;
      if (!out.empty()) out += '.';
      for (std::size_t i = pos + 1; i <= pos + len; ++i) AppendEscaped(out, m_[i]);
      pos += 1 + len;
    }
    if (out.empty()) out = ".";
    return true;
  }

 private:
  static void AppendEscaped(std::string& out, unsigned char c) {
    switch (c) {
      case '.': case '\\': case '"': case ';': case '(': case ')': case '@': case '$':
        out += '\\';
        out += static_cast<char>(c);
        return;
      default:
        break;
    }
    if (c > 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
      return;
    }
    out += '\\';
    out += static_cast<char>('0' + c / 100);
    out += static_cast<char>('0' + c / 10 % 10);
    out += static_cast<char>('0' + c % 10);
  }

  const unsigned char* m_;
  std::size_t size_;
  std::size_t at_;
};

// The records of one type. NXDOMAIN is an error; NODATA (the name exists without this type, and
// is no alias) is an empty answer.
Result<DnsAnswer> Query(ResolverState& state, const std::string& name, DnsAddressType type, const DnsOptions& options) {
  // A heap buffer of the largest message: glibc fills at most the buffer but returns the length
  // the server sent, so a smaller buffer would have to be asked for again.
  std::vector<unsigned char> answer(kMaxDnsMessageBytes);
  const char* what = type == DnsAddressType::kA ? "A" : "AAAA";
  const int len = res_nquery(state.get(), name.c_str(), ns_c_in, type == DnsAddressType::kA ? ns_t_a : ns_t_aaaa,
                             answer.data(), static_cast<int>(answer.size()));
  if (len < 0) {
    switch (state.get()->res_h_errno) {
      case NO_DATA: return DnsAnswer{{}, {name}};
      case HOST_NOT_FOUND:
        return Error{"dns: " + name + " does not exist (NXDOMAIN from " + Describe(options) + ")"};
      case TRY_AGAIN:
        return Error{"dns: no answer for " + name + " " + what + " from " + Describe(options) +
                     " (timeout or SERVFAIL)"};
      default: return Error{"dns: query for " + name + " " + what + " failed at " + Describe(options)};
    }
  }
  if (static_cast<std::size_t>(len) > answer.size()) {
    return Error{"dns: the answer for " + name + " " + what + " from " + Describe(options) + " claims " +
                 std::to_string(len) + " bytes, more than a DNS message holds (" + std::to_string(answer.size()) + ")"};
  }
  Result<DnsAnswer> parsed = ParseDnsAnswer(answer.data(), static_cast<std::size_t>(len), name, type);
  if (!parsed.ok()) return Error{parsed.error().message + " (from " + Describe(options) + ")"};
  return parsed;
}

}  // namespace

Result<DnsAnswer> ParseDnsAnswer(const unsigned char* message, std::size_t size, std::string_view name,
                                 DnsAddressType type) {
  const std::uint16_t wanted = type == DnsAddressType::kA ? kTypeA : kTypeAaaa;
  const std::string asked(WithoutTrailingDot(name));
  const std::string context = "dns: the answer for " + Shown(asked) + (type == DnsAddressType::kA ? " A" : " AAAA");
  if (message == nullptr || size > kMaxDnsMessageBytes) {
    return Error{context + " is malformed (" + std::to_string(size) + " bytes)"};
  }
  MessageReader in(message, size);
  std::uint16_t flags = 0, questions = 0, answers = 0;
  if (!in.Skip(2) || !in.U16(flags) || !in.U16(questions) || !in.U16(answers) || !in.Skip(4)) {
    return Error{context + " is malformed: " + std::to_string(size) + " bytes, shorter than a DNS header"};
  }
  // glibc sets TC on an answer it had to cut to fit the buffer (and a server on one it cut).
  if ((flags & kFlagTruncated) != 0) return Error{context + " is truncated (TC)"};
  if (questions != 1) return Error{context + " is malformed: " + std::to_string(questions) + " questions"};
  std::string question_name;
  std::uint16_t question_type = 0, question_class = 0;
  if (!in.Name(question_name) || !in.U16(question_type) || !in.U16(question_class)) {
    return Error{context + " is malformed: a bad question"};
  }
  if (Lower(question_name) != Lower(asked) || question_type != wanted || question_class != kClassIn) {
    return Error{context + " answers another question (" + Shown(question_name) + ")"};
  }

  std::map<std::string, std::string> aliases;               // owner (lower case) -> CNAME target as sent
  std::vector<std::pair<std::string, std::string>> records;  // owner (lower case), address
  for (std::uint16_t i = 0; i < answers; ++i) {
    std::string owner;
    std::uint16_t rr_type = 0, rr_class = 0, length = 0;
    if (!in.Name(owner) || !in.U16(rr_type) || !in.U16(rr_class) || !in.Skip(4) || !in.U16(length) ||
        length > in.left()) {
      return Error{context + " is malformed: record " + std::to_string(i + 1) + " of " + std::to_string(answers)};
    }
    const std::size_t data = in.offset();
    if (!in.Skip(length)) return Error{context + " is malformed: record " + std::to_string(i + 1)};
    if (rr_class != kClassIn) continue;
    if (rr_type == kTypeCname) {
      // The target must be exactly the record's data (its pointers may lead back into the message).
      MessageReader target_in(message, size, data);
      std::string target;
      if (!target_in.Name(target) || target_in.offset() != data + length) {
        return Error{context + " is malformed: a bad CNAME for " + Shown(owner)};
      }
      auto [it, inserted] = aliases.emplace(Lower(owner), target);
      if (!inserted && Lower(it->second) != Lower(target)) {
        return Error{context + " is malformed: " + Shown(owner) + " has two CNAMEs (" + Shown(it->second) + ", " +
                     Shown(target) + ")"};
      }
      continue;
    }
    if (rr_type != wanted) continue;
    char text[INET6_ADDRSTRLEN];
    if (length != (type == DnsAddressType::kA ? 4 : 16) ||
        inet_ntop(type == DnsAddressType::kA ? AF_INET : AF_INET6, message + data, text, sizeof text) == nullptr) {
      return Error{context + " is malformed: an address record of " + std::to_string(length) + " bytes"};
    }
    records.emplace_back(Lower(owner), text);
  }

  DnsAnswer out;
  out.chain.push_back(asked);
  std::string at = Lower(asked);
  std::set<std::string> seen = {at};
  for (auto it = aliases.find(at); it != aliases.end(); it = aliases.find(at)) {
    out.chain.push_back(it->second);
    at = Lower(it->second);
    if (!seen.insert(at).second) return Error{"dns: " + Shown(asked) + " is a CNAME loop: " + ChainText(out.chain)};
    if (out.chain.size() - 1 > kMaxCnameChain) {
      return Error{"dns: " + Shown(asked) + " is a chain of more than " + std::to_string(kMaxCnameChain) +
                   " CNAMEs: " + ChainText(out.chain)};
    }
  }
  for (auto& [owner, address] : records) {
    if (owner == at) out.addresses.push_back(std::move(address));
  }
  return out;
}

Result<std::vector<std::string>> ResolveAddresses(std::string_view name, const DnsOptions& options) {
  if (name.empty() || name.size() > 253) return Error{"dns: invalid name \"" + std::string(name) + "\""};
  ResolverState state;
  if (Status st = state.Init(options); !st.ok()) return st.error();
  const std::string n(name);
  Result<DnsAnswer> a = Query(state, n, DnsAddressType::kA, options);
  if (!a.ok()) return a.error();
  Result<DnsAnswer> aaaa = Query(state, n, DnsAddressType::kAaaa, options);
  if (!aaaa.ok()) return aaaa.error();
  std::vector<std::string> v4 = std::move(a->addresses), v6 = std::move(aaaa->addresses);
  if (v4.empty() && v6.empty()) {
    // An alias that leads to no address is a broken name, not an empty Service.
    const std::vector<std::string>& chain = a->chain.size() > 1 ? a->chain : aaaa->chain;
    if (chain.size() > 1) {
      return Error{"dns: " + Shown(n) + " is an alias (" + ChainText(chain) + ") whose last name has no A or AAAA record (from " +
                   Describe(options) + ")"};
    }
  }
  for (auto* list : {&v4, &v6}) {
    std::sort(list->begin(), list->end());
    list->erase(std::unique(list->begin(), list->end()), list->end());
  }
  v4.insert(v4.end(), v6.begin(), v6.end());
  return v4;
}

}  // namespace rdmahd
