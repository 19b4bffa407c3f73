// The reference floor for bench/scrape_bench.py: the CPU cost of reading a list of files once each,
// one pread at offset 0 on descriptors held open, with nothing else (no parsing, no rendering, no
// HTTP). Fed the files rdma-healthd holds open, it shows how much of a scrape is the kernel's
// per-file read cost, which no user-space work can remove.
//   rdmahd_pread_floor [--shared-fd-table] LIST_FILE
//     (one path per line; then one pass per "scrape" line on stdin, answered with "ok" on stdout)
// --shared-fd-table starts a second thread that only sleeps. The kernel then takes and drops a
// reference on the file for every read (a process whose descriptor table is shared between threads
// cannot skip that), as it does for any multi-threaded server, rdma-healthd and node_exporter alike.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  const bool shared_fd_table = argc == 3 && std::string_view(argv[1]) == "--shared-fd-table";
  if (argc != 2 && !shared_fd_table) {
    std::fprintf(stderr, "usage: %s [--shared-fd-table] LIST_FILE\n", argv[0]);
    return 2;
  }
  const char* list_path = argv[argc - 1];
  std::ifstream list(list_path);
  if (!list) {
    std::fprintf(stderr, "%s: cannot read %s\n", argv[0], list_path);
    return 2;
  }
  if (shared_fd_table) {
    std::thread([] {
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    }).detach();
  }
  std::vector<int> fds;
  for (std::string path; std::getline(list, path);) {
    if (path.empty()) continue;
    // Opened as rdma-healthd opens its attribute files (common/node_fs.cc).
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOATIME);
    if (fd < 0 && errno == EPERM) fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      std::fprintf(stderr, "%s: cannot open %s\n", argv[0], path.c_str());
      return 2;
    }
    fds.push_back(fd);
  }
  char buf[4096];
  for (std::string line; std::getline(std::cin, line);) {
    for (int fd : fds) {
      if (::pread(fd, buf, sizeof buf, 0) < 0) return 1;
    }
    std::cout << "ok " << fds.size() << std::endl;
  }
  return 0;
}
