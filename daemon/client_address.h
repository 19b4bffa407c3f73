// Who an HTTP client is: ClientAddressKey, the key its connections and password checks are counted
// under (the per-client limits of ConnectionWatch and PasswordCheckQueue), and its address as text
// for the log. The MHD_Connection forms ask libmicrohttpd for the connection's peer address.
#pragma once

#include <string>

struct sockaddr;
struct MHD_Connection;

namespace rdmahd {

// Who a connection counts against for max_connections_per_client (and PasswordCheckLimits): an
// IPv4 address, or an IPv6 address's /64 (what one host or site is usually given). An IPv4-mapped
// IPv6 address is its IPv4 address.
std::string ClientAddressKey(const sockaddr* address);

// Who a connection is from (ClientAddressKey).
std::string ClientKey(MHD_Connection* conn);

// The client's address as text, for the log ("unknown" when libmicrohttpd cannot say).
std::string ClientAddressText(MHD_Connection* conn);

}  // namespace rdmahd
