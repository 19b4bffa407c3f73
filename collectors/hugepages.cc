#include "collectors/hugepages.h"

#include <cerrno>
#include <functional>

#include "common/parse.h"
#include "parsers/host_memory_parse.h"

namespace rdmahd {
namespace {

// Reads one attribute: held (re-read with pread) in the collector, else open/read/close.
using AttrReader = std::function<Result<std::string>(const std::string& path)>;
// Lists a folder: from the collector's ListingCache, else afresh.
using DirLister = std::function<Result<std::vector<std::string>>(const std::string& dir)>;

bool IsMissing(const Error& e) { return e.errno_value == ENOENT || e.errno_value == ENOTDIR; }

// The four (or, per node, three) count files of one pool folder.
void ReadPool(const AttrReader& read, const std::string& dir, bool with_reserved, HugepagePool& pool,
              std::vector<std::string>& notes, std::vector<std::string>& errors) {
  struct File {
    const char* name;
    std::optional<std::uint64_t>* value;
  };
  const File files[] = {{"nr_hugepages", &pool.total},
                        {"free_hugepages", &pool.free},
                        {"resv_hugepages", &pool.reserved},
                        {"surplus_hugepages", &pool.surplus}};
  for (const File& f : files) {
    if (!with_reserved && f.value == &pool.reserved) continue;
    const std::string path = dir + "/" + f.name;
    auto text = read(path);
    if (!text) {
      notes.push_back(text.error().message);
      if (!IsMissing(text.error())) errors.push_back(text.error().message);
      continue;
    }
    auto n = ParseHugepageCount(*text);
    if (!n) {
      const std::string message = path + ": " + n.error().message;
      notes.push_back(message);
      errors.push_back(message);
      continue;
    }
    *f.value = *n;
  }
}

HugepageSizeFacts& SizeEntry(HostMemoryFacts& facts, std::uint64_t size) {
  for (auto& s : facts.hugepage_sizes) {
    if (s.size_bytes == size) return s;
  }
  auto it = facts.hugepage_sizes.begin();
  while (it != facts.hugepage_sizes.end() && it->size_bytes < size) ++it;
  it = facts.hugepage_sizes.insert(it, HugepageSizeFacts{});
  it->size_bytes = size;
  return *it;
}

// "node12" -> 12.
std::optional<int> NodeNumber(const std::string& name) {
  if (name.size() < 5 || name.compare(0, 4, "node") != 0) return std::nullopt;
  auto n = ParseU64(std::string_view(name).substr(4));
  if (!n || *n > 65535 || name.substr(4) != std::to_string(*n)) return std::nullopt;
  return static_cast<int>(*n);
}

HostMemoryFacts Read(const NodeFs& fs, const AttrReader& read_attr, const DirLister& list,
                     std::vector<std::string>& errors) {
  HostMemoryFacts facts;

  // /proc/meminfo (procfs makes it anew on every read from offset 0).
  const std::string meminfo_path = fs.Proc("meminfo");
  std::optional<MeminfoHugepages> meminfo;
  if (auto text = read_attr(meminfo_path)) {
    if (auto m = ParseMeminfoHugepages(*text)) {
      meminfo = *m;
      facts.default_hugepage_size_bytes = m->page_size_bytes;
      facts.hugetlb_bytes = m->hugetlb_bytes;
      if (!m->page_size_bytes) facts.meminfo_note = meminfo_path + " has no Hugepagesize (kernel without hugetlbfs)";
    } else {
      facts.meminfo_note = meminfo_path + ": " + m.error().message;
      errors.push_back(facts.meminfo_note);
    }
  } else {
    facts.meminfo_note = text.error().message;
    if (!IsMissing(text.error())) errors.push_back(text.error().message);
  }

  // System-wide pools.
  const std::string pools_dir = fs.Sys("kernel/mm/hugepages");
  if (auto entries = list(pools_dir)) {
    for (const std::string& name : *entries) {
      auto size = ParseHugepageDirName(name);
      if (!size) continue;
      HugepageSizeFacts& s = SizeEntry(facts, *size);
      ReadPool(read_attr, pools_dir + "/" + name, true, s.system, s.notes, errors);
    }
    if (facts.hugepage_sizes.empty()) facts.hugepages_note = pools_dir + " lists no hugepages-<size>kB pool";
  } else {
    facts.hugepages_note = entries.error().message;
    if (!IsMissing(entries.error())) errors.push_back(entries.error().message);
  }
  // Without the pool folder (captures that kept only /proc), meminfo's HugePages_* are the
  // default size's system-wide pool.
  if (meminfo && meminfo->page_size_bytes && meminfo->total && !facts.FindSize(*meminfo->page_size_bytes)) {
    HugepagePool& pool = SizeEntry(facts, *meminfo->page_size_bytes).system;
    pool = HugepagePool{meminfo->total, meminfo->free, meminfo->reserved, meminfo->surplus};
  }

  // Per-node pools.
  const std::string nodes_dir = fs.Sys("devices/system/node");
  if (auto entries = list(nodes_dir)) {
    for (const std::string& name : *entries) {
      auto node = NodeNumber(name);
      if (!node) continue;
      const std::string node_pools = nodes_dir + "/" + name + "/hugepages";
      auto sizes = list(node_pools);
      if (sizes) {
        for (const std::string& size_name : *sizes) {
          auto size = ParseHugepageDirName(size_name);
          if (!size) continue;
          HugepageSizeFacts& s = SizeEntry(facts, *size);
          ReadPool(read_attr, node_pools + "/" + size_name, false, s.nodes[*node], s.notes, errors);
        }
        continue;
      }
      // No hugepages folder (captures, kernels without per-node pools): the node's meminfo has
      // the default size's counts.
      if (!facts.default_hugepage_size_bytes) continue;
      const std::string node_meminfo = nodes_dir + "/" + name + "/meminfo";
      auto text = read_attr(node_meminfo);
      if (!text) continue;
      auto pools = ParseNodeMeminfoHugepages(*text);
      if (!pools) {
        errors.push_back(node_meminfo + ": " + pools.error().message);
        continue;
      }
      auto it = pools->find(*node);
      if (it == pools->end()) continue;
      SizeEntry(facts, *facts.default_hugepage_size_bytes).nodes[*node] = it->second;
    }
  }

  // Transparent hugepages.
  const std::string thp_path = fs.Sys("kernel/mm/transparent_hugepage/enabled");
  if (auto text = read_attr(thp_path)) {
    if (auto mode = ParseThpMode(*text)) {
      facts.thp_mode = *mode;
    } else {
      facts.thp_note = thp_path + ": " + mode.error().message;
      errors.push_back(facts.thp_note);
    }
  } else {
    facts.thp_note = text.error().message;
  }

  // Automatic NUMA balancing (absent on kernels without CONFIG_NUMA_BALANCING).
  const std::string balancing_path = fs.Proc("sys/kernel/numa_balancing");
  if (auto text = read_attr(balancing_path)) {
    if (auto mode = ParseNumaBalancing(*text)) {
      facts.numa_balancing_mode = *mode;
      facts.numa_balancing = *mode != 0;
    } else {
      facts.numa_balancing_note = balancing_path + ": " + mode.error().message;
      errors.push_back(facts.numa_balancing_note);
    }
  } else {
    facts.numa_balancing_note = text.error().message;
  }
  return facts;
}

std::string SizeLabel(std::uint64_t bytes) { return std::to_string(bytes); }

}  // namespace

HostMemoryFacts ReadHostMemory(const NodeFs& fs, std::vector<std::string>& errors) {
  return Read(fs, [&](const std::string& path) { return fs.ReadFile(path); },
              [&](const std::string& dir) { return fs.ListDir(dir); }, errors);
}

Status HugepagesCollector::Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) {
  // A count file that went away under a listed folder (a node taken offline, a pool size gone):
  // list the folders again next time.
  const std::string pools_dir = ctx.fs.Sys("kernel/mm/hugepages/"), nodes_dir = ctx.fs.Sys("devices/system/node/");
  bool listed_entry_gone = false;
  AttrReader held = [&](const std::string& path) -> Result<std::string> {
    auto r = held_.Read(ctx.fs, path);
    if (!r) {
      listed_entry_gone |= (path.starts_with(pools_dir) || path.starts_with(nodes_dir)) && ListedEntryGone(ctx.fs, path, r.error());
      return r.error();
    }
    return std::string(*r);
  };
  DirLister list = [&](const std::string& dir) { return listings_.List(ctx.fs, dir); };
  snapshot.Put(Read(ctx.fs, held, list, outcome.errors));
  if (listed_entry_gone) listings_.Forget();
  return Status::Ok();
}

void HugepagesCollector::Render(const Snapshot& snapshot, MetricSink& sink) const {
  const auto* f = snapshot.Get<HostMemoryFacts>();
  if (f == nullptr) return;
  auto pages = sink.Gauge("rdma_host_hugepages",
                          "Hugepages of one size system-wide, by state (total, free, reserved, surplus)");
  auto node_pages = sink.Gauge("rdma_host_node_hugepages",
                               "Hugepages of one size on one NUMA node, by state (total, free, surplus)");
  for (const HugepageSizeFacts& s : f->hugepage_sizes) {
    const std::string size = SizeLabel(s.size_bytes);
    const std::pair<const char*, const std::optional<std::uint64_t>*> system[] = {
        {"total", &s.system.total}, {"free", &s.system.free}, {"reserved", &s.system.reserved}, {"surplus", &s.system.surplus}};
    for (const auto& [state, v] : system) {
      if (*v) pages.Add({{"size_bytes", size}, {"state", state}}, static_cast<double>(**v));
    }
    for (const auto& [node, pool] : s.nodes) {
      const std::string n = std::to_string(node);
      const std::pair<const char*, const std::optional<std::uint64_t>*> per_node[] = {
          {"total", &pool.total}, {"free", &pool.free}, {"surplus", &pool.surplus}};
      for (const auto& [state, v] : per_node) {
        if (*v) node_pages.Add({{"node", n}, {"size_bytes", size}, {"state", state}}, static_cast<double>(**v));
      }
    }
  }
  if (f->default_hugepage_size_bytes) {
    sink.Gauge("rdma_host_hugepage_default_size_bytes", "The kernel's default hugepage size (Hugepagesize in /proc/meminfo)")
        .Add({}, static_cast<double>(*f->default_hugepage_size_bytes));
  }
  if (f->hugetlb_bytes) {
    sink.Gauge("rdma_host_hugetlb_bytes", "Memory in hugepage pools of every size (Hugetlb in /proc/meminfo)")
        .Add({}, static_cast<double>(*f->hugetlb_bytes));
  }
  if (f->thp_mode) {
    sink.Gauge("rdma_host_transparent_hugepages_info", "Transparent hugepage mode (/sys/kernel/mm/transparent_hugepage/enabled)")
        .Add({{"mode", *f->thp_mode}}, 1);
  }
  if (f->numa_balancing) {
    sink.Gauge("rdma_host_numa_balancing_enabled", "1 when automatic NUMA balancing migrates pages (/proc/sys/kernel/numa_balancing)")
        .Add({}, *f->numa_balancing ? 1 : 0);
  }
}

RDMAHD_REGISTER_COLLECTOR("hugepages", HugepagesCollector,
                          "hugepage pools per size and NUMA node, transparent hugepages, NUMA balancing");

}  // namespace rdmahd
