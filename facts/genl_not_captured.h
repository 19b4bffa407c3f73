// Why a fact only the running kernel gives over generic netlink is unknown on a tree that is not
// the live /sys. Here, beside the facts, so that facts worded per netdev can build it when read
// instead of each holding its own copy.
#pragma once

#include <string>

namespace rdmahd {

// "not captured: <what> from the node's kernel over netlink and --path.sysfs is not /sys (run
// `<command>` on the node)".
inline std::string GenlNotCaptured(const std::string& what, const std::string& command) {
  return "not captured: " + what + " from the node's kernel over netlink and --path.sysfs is not /sys (run `" +
         command + "` on the node)";
}

}  // namespace rdmahd
