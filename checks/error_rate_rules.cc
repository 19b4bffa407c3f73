#include "checks/error_rate_rules.h"

namespace rdmahd::error_rates {

const std::vector<std::vector<std::string_view>>& PacketCounters(Packets p) {
  static const std::vector<std::vector<std::string_view>> kRx = {
      {"rcvd_pkts"}, {"port_rcv_packets"}, {"rx_packets_phy"}, {"eth-mac-FramesReceivedOK"}};
  static const std::vector<std::vector<std::string_view>> kTx = {
      {"sent_pkts"}, {"port_xmit_packets"}, {"tx_packets_phy"}, {"eth-mac-FramesTransmittedOK"}};
  static const std::vector<std::vector<std::string_view>> kAll = {
      {"rcvd_pkts", "sent_pkts"}, {"port_rcv_packets", "port_xmit_packets"}, {"rx_packets_phy", "tx_packets_phy"},
      {"eth-mac-FramesReceivedOK", "eth-mac-FramesTransmittedOK"}};
  static const std::vector<std::vector<std::string_view>> kNone;
  switch (p) {
    case Packets::kRx: return kRx;
    case Packets::kTx: return kTx;
    case Packets::kAll: return kAll;
    case Packets::kNone: break;
  }
  return kNone;
}

std::string_view Direction(Packets p) {
  switch (p) {
    case Packets::kRx: return "received";
    case Packets::kTx: return "sent";
    case Packets::kAll: return "sent and received";
    case Packets::kNone: break;
  }
  return "";
}

}  // namespace rdmahd::error_rates
