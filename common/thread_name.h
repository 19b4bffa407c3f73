// Names the calling thread, as `top -H`, `ps -L`, /proc/PID/task/*/comm, gdb and perf show it. The
// kernel keeps 15 bytes; longer names are cut. Every long-lived thread of the daemon is named, so
// an operator can see which part of it is busy or stuck.
#pragma once

#include <pthread.h>

#include <string>
#include <string_view>

namespace rdmahd {

inline void NameThisThread(std::string_view name) {
  const std::string cut(name.substr(0, 15));
  ::pthread_setname_np(::pthread_self(), cut.c_str());
}

}  // namespace rdmahd
