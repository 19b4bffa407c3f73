// Small things tests of several files share: a folder's names, a gzip body inflated, a text shaped
// like an exposition, and the smallest RoCE port a sysfs tree can hold.
#pragma once

#include <dirent.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "tests/support/test_paths.h"

namespace rdmahd::testing {

// The names in folder `dir` (no "." or ".."), sorted; empty when it cannot be listed.
inline std::vector<std::string> FolderNames(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) out.push_back(e->d_name);
    }
    ::closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A gzip member inflated (at most 1 MiB), or "<corrupt gzip>".
inline std::string Gunzip(const std::string& in) {
  z_stream z{};
  inflateInit2(&z, 15 + 16);
  std::string out(1 << 20, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = inflate(&z, Z_FINISH);
  out.resize(z.total_out);
  inflateEnd(&z);
  return rc == Z_STREAM_END ? out : "<corrupt gzip>";
}

// A metrics-like text of about `lines` series (what an exposition compresses like).
inline std::string MetricsText(int lines) {
  std::string text;
  for (int i = 0; i < lines; ++i) {
    text += "rdma_port_hw_counters_total{device=\"mlx5_" + std::to_string(i % 97) + "\",counter=\"c" +
            std::to_string(i) + "\"} " + std::to_string(i * 7919) + "\n";
  }
  return text;
}

// Under `dir` (a sysfs root): rxe0 with one Ethernet port whose RoCE v2 GID names `netdev`, and
// that netdev up with MTU 1500.
inline void WriteOneRocePort(const TempDir& dir, const std::string& netdev) {
  dir.Write("class/infiniband/rxe0/ports/1/link_layer", "Ethernet\n");
  dir.Write("class/infiniband/rxe0/ports/1/gids/0", "fe80:0000:0000:0000:5054:00ff:fe12:3456\n");
  dir.Write("class/infiniband/rxe0/ports/1/gid_attrs/types/0", "RoCE v2\n");
  dir.Write("class/infiniband/rxe0/ports/1/gid_attrs/ndevs/0", netdev + "\n");
  dir.Write("class/net/" + netdev + "/mtu", "1500\n");
  dir.Write("class/net/" + netdev + "/operstate", "up\n");
}

}  // namespace rdmahd::testing
