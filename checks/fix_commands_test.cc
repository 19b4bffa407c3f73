// Every fix a check prints must run as printed: each command it names gets arguments of the kind
// the command takes (`lspci -s` a PCI address, dcb/ip/ethtool a netdev of the node, the RDMA tools
// an RDMA device and port of the node, `echo > FILE` a path on the node), or a placeholder in angle
// brackets that says what to put there (`<netdev>`, `<PCI address>`), never a value of another kind.
//
// The walk: every check's verdicts on every fixture tree (the project's tests/fixtures and the real
// captures, read in place), under the tree's own config and under two strict policies that make
// most checks fail; every command each fix names is parsed and its arguments checked against a
// grammar of that command and the tree's devices and netdevs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/collection_engine.h"
#include "core/topology.h"
#include "facts/rdma_device_facts.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

namespace stdfs = std::filesystem;

// ---- what the node has ----------------------------------------------------------------------------
struct Node {
  std::set<std::string> netdevs;                          // class/net entries and the ports' netdevs
  std::map<std::string, std::set<std::uint32_t>> ports;  // RDMA device -> port numbers
  std::set<std::string> pci_addresses;                    // of the RDMA devices, where known
};

Node NodeOf(const Report& report, const NodeFs& fs) {
  Node n;
  if (auto listed = fs.ListDir(fs.Sys("class/net")); listed.ok()) n.netdevs.insert(listed->begin(), listed->end());
  if (const auto* t = report.snapshot.Get<Topology>()) {
    for (const std::string& nd : t->Netdevs()) n.netdevs.insert(nd);
    for (const TopologyDevice& d : t->devices) {
      auto& ports = n.ports[d.name];
      for (const TopologyPort& p : d.ports) ports.insert(p.port);
      if (d.pci_address) n.pci_addresses.insert(*d.pci_address);
    }
  }
  return n;
}

// ---- kinds of argument ----------------------------------------------------------------------------
bool IsPlaceholder(const std::string& a) { return a.size() > 2 && a.front() == '<' && a.back() == '>'; }
// A placeholder for a value of `kind`: "<netdev>", "<PCI address of mlx5_1>".
bool IsPlaceholderFor(const std::string& a, std::string_view kind) {
  return IsPlaceholder(a) && a.find(kind) != std::string::npos;
}
bool Matches(const std::string& a, const char* re) { return std::regex_match(a, std::regex(re)); }
bool IsNumber(const std::string& a) { return Matches(a, "[0-9]+"); }

std::string Netdev(const std::string& a, const Node& n) {
  if (IsPlaceholderFor(a, "netdev")) return "";
  if (!n.netdevs.contains(a)) return "\"" + a + "\" is not a netdev of this node";
  return "";
}
std::string RdmaDevice(const std::string& a, const Node& n) {
  if (IsPlaceholderFor(a, "device")) return "";
  if (!n.ports.contains(a)) return "\"" + a + "\" is not an RDMA device of this node";
  return "";
}
std::string RdmaPort(const std::string& device, const std::string& port, const Node& n) {
  if (std::string e = RdmaDevice(device, n); !e.empty()) return e;
  if (IsPlaceholderFor(port, "port")) return "";
  if (!IsNumber(port)) return "\"" + port + "\" is not a port number";
  if (n.ports.contains(device) && !n.ports.at(device).contains(static_cast<std::uint32_t>(std::stoul(port)))) {
    return device + " has no port " + port;
  }
  return "";
}
// "mlx5_0/1", as rdma(8) names a link.
std::string RdmaLink(const std::string& a, const Node& n) {
  const std::size_t slash = a.find('/');
  if (slash == std::string::npos) return "\"" + a + "\" is not DEVICE/PORT";
  return RdmaPort(a.substr(0, slash), a.substr(slash + 1), n);
}
// lspci -s: [[domain:]bus:]device.function, and one of the node's devices where they are known.
std::string PciSlot(const std::string& a, const Node& n) {
  if (IsPlaceholderFor(a, "PCI address")) return "";
  if (!Matches(a, "(([0-9a-fA-F]{1,4}:)?[0-9a-fA-F]{1,2}:)?[0-9a-fA-F]{1,2}\\.[0-7]")) {
    return "\"" + a + "\" is not a PCI address ([[domain:]bus:]device.function)";
  }
  if (!n.pci_addresses.empty() && !n.pci_addresses.contains(a)) return a + " is not the PCI address of an RDMA device here";
  return "";
}
// A file or folder on the node: absolute, under the kernel's or the system's trees, never the
// analysing machine's path to a capture; an RDMA device or netdev named in it is one of the node's.
std::string NodePath(const std::string& a, const Node& n) {
  if (IsPlaceholder(a)) return "";
  static const std::vector<std::string> kRoots = {"/sys/", "/proc/", "/dev/", "/etc/"};
  if (std::none_of(kRoots.begin(), kRoots.end(), [&](const std::string& r) { return a.rfind(r, 0) == 0; })) {
    return "\"" + a + "\" is not a path on the node (/sys, /proc, /dev, /etc)";
  }
  if (a.find(testing::SourceDir()) != std::string::npos || a.find("/fixtures/") != std::string::npos) {
    return "\"" + a + "\" names the capture, not the node";
  }
  auto component_after = [&](const std::string& prefix) -> std::optional<std::string> {
    if (a.rfind(prefix, 0) != 0) return std::nullopt;
    return a.substr(prefix.size(), a.find('/', prefix.size()) - prefix.size());
  };
  if (auto d = component_after("/sys/class/infiniband/")) return RdmaDevice(*d, n);
  if (auto d = component_after("/sys/kernel/config/rdma_cm/")) return RdmaDevice(*d, n);
  if (auto d = component_after("/sys/class/net/")) return Netdev(*d, n);
  return "";
}
std::string Word(const std::string& a, const char* what, const char* re) {
  return Matches(a, re) || IsPlaceholder(a) ? "" : "\"" + a + "\" is not " + what;
}

// ---- command grammars ------------------------------------------------------------------------------
using Args = std::vector<std::string>;
using Grammar = std::function<std::string(const Args&, const Node&)>;

// Options: "-x" flags, and "-y VALUE" / "--y=VALUE" options whose value `check` judges.
struct OptionSpec {
  std::set<std::string> flags;
  std::map<std::string, std::function<std::string(const std::string&, const Node&)>> valued;
};
// Consumes leading options; returns the complaint or "" and leaves `i` at the first positional.
std::string Options(const Args& a, std::size_t& i, const OptionSpec& spec, const Node& n) {
  for (; i < a.size() && a[i].size() > 1 && a[i][0] == '-'; ++i) {
    const std::string& o = a[i];
    if (spec.flags.contains(o)) continue;
    const std::size_t eq = o.find('=');
    const std::string name = eq == std::string::npos ? o : o.substr(0, eq);
    auto it = spec.valued.find(name);
    if (it == spec.valued.end()) return "unknown option " + o;
    std::string value;
    if (eq != std::string::npos) {
      value = o.substr(eq + 1);
    } else {
      if (i + 1 >= a.size()) return o + " needs a value";
      value = a[++i];
    }
    if (std::string e = it->second(value, n); !e.empty()) return o + ": " + e;
  }
  return "";
}
std::string NoMore(const Args& a, std::size_t i) { return i < a.size() ? "unexpected argument \"" + a[i] + "\"" : ""; }

std::string Lspci(const Args& a, const Node& n) {
  std::size_t i = 0;
  if (std::string e = Options(a, i, {{"-v", "-vv", "-vvv", "-n", "-nn", "-k", "-D", "-t", "-x", "-xxx"},
                                     {{"-s", PciSlot}, {"-d", [](const std::string& v, const Node&) {
                                        return Word(v, "VENDOR:DEVICE", "[0-9a-fA-F]{0,4}:[0-9a-fA-F]{0,4}");
                                      }}}},
                              n);
      !e.empty()) {
    return e;
  }
  return NoMore(a, i);
}

std::string Ethtool(const Args& a, const Node& n) {
  if (a.empty()) return "no netdev";
  std::size_t i = 0;
  static const std::set<std::string> kOnNetdev = {"-S", "-a", "-A", "-m", "-i", "-k", "-g", "-l", "--show-priv-flags"};
  std::string opt;
  if (a[0][0] == '-') {
    if (!kOnNetdev.contains(a[0])) return "unknown option " + a[0];
    opt = a[0];
    i = 1;
  }
  if (i >= a.size()) return "no netdev after " + (opt.empty() ? std::string("ethtool") : opt);
  if (std::string e = Netdev(a[i++], n); !e.empty()) return e;
  if (opt == "-A") {
    if (i == a.size()) return "-A without a setting";
    for (; i < a.size(); i += 2) {
      if (a[i] != "autoneg" && a[i] != "rx" && a[i] != "tx") return "-A takes autoneg|rx|tx, not \"" + a[i] + "\"";
      if (i + 1 >= a.size() || (a[i + 1] != "on" && a[i + 1] != "off")) return a[i] + " needs on|off";
    }
  }
  return NoMore(a, i);
}

std::string PrioPair(const std::string& v, int max_first, const char* second_kind) {
  std::smatch m;
  if (IsPlaceholder(v)) return "";
  if (!std::regex_match(v, m, std::regex("([0-9]+):(.+)"))) return "\"" + v + "\" is not X:Y";
  if (std::stoi(m[1]) > max_first) return "\"" + v + "\": " + m[1].str() + " is out of range";
  const std::string second = m[2];
  if (std::string(second_kind) == "on|off") return second == "on" || second == "off" ? "" : "\"" + v + "\" is not P:on|off";
  if (second.find('<') == 0) return "";
  return IsNumber(second) && std::stoi(second) <= 7 ? "" : "\"" + v + "\": " + second + " is not a priority 0..7";
}

std::string Dcb(const Args& a, const Node& n) {
  static const std::set<std::string> kObjects = {"pfc", "app", "ets", "dcbx", "buffer", "maxrate", "apptrust"};
  static const std::set<std::string> kCommands = {"show", "set", "add", "del", "replace", "flush"};
  if (a.size() < 4) return "dcb OBJECT COMMAND dev NETDEV ...";
  if (!kObjects.contains(a[0])) return "unknown dcb object " + a[0];
  if (!kCommands.contains(a[1])) return "unknown dcb command " + a[1];
  if (a[2] != "dev") return "dcb " + a[0] + " " + a[1] + " takes dev NETDEV, not \"" + a[2] + "\"";
  if (std::string e = Netdev(a[3], n); !e.empty()) return e;
  std::size_t i = 4;
  while (i < a.size()) {
    const std::string& key = a[i++];
    int max_first = 0;
    const char* second = "";
    if (a[0] == "pfc" && key == "prio-pfc") {
      max_first = 7;
      second = "on|off";
    } else if (a[0] == "app" && key == "dscp-prio") {
      max_first = 63;
      second = "prio";
    } else if (a[0] == "app" && key == "pcp-prio") {
      max_first = 7;
      second = "prio";
    } else {
      return "unknown dcb " + a[0] + " parameter " + key;
    }
    if (a[1] == "flush") continue;  // flush names the table only
    if (i >= a.size()) return key + " needs a value";
    for (; i < a.size() && a[i].find(':') != std::string::npos; ++i) {
      if (std::string e = PrioPair(a[i], max_first, second); !e.empty()) return e;
    }
  }
  return "";
}

std::string Ip(const Args& a, const Node& n) {
  if (a.size() >= 3 && a[0] == "link" && (a[1] == "set" || a[1] == "show")) {
    std::size_t i = 2;
    if (a[i] == "dev") ++i;
    if (i >= a.size()) return "ip link " + a[1] + " without a netdev";
    if (std::string e = Netdev(a[i++], n); !e.empty()) return e;
    while (i < a.size()) {
      const std::string& k = a[i++];
      if (k == "up" || k == "down") continue;
      if (k == "mtu") {
        if (i >= a.size() || !IsNumber(a[i])) return "mtu needs a number";
        ++i;
        continue;
      }
      return "unknown ip link setting " + k;
    }
    return "";
  }
  if (a.size() == 5 && (a[0] == "addr" || a[0] == "address") && a[1] == "add" && a[3] == "dev") {
    if (!IsPlaceholder(a[2]) && !Matches(a[2], "[0-9a-fA-F:.]+/[0-9]+") && a[2] != "<ip>/<len>") {
      return "\"" + a[2] + "\" is not ADDRESS/LEN";
    }
    return Netdev(a[4], n);
  }
  return "unknown ip command";
}

std::string Rdma(const Args& a, const Node& n) {
  if (a.size() == 3 && a[0] == "link" && a[1] == "show") return RdmaLink(a[2], n);
  if (a.size() == 3 && a[0] == "dev" && a[1] == "show") return RdmaDevice(a[2], n);
  return "unknown rdma command";
}

std::string IbvDevinfo(const Args& a, const Node& n) {
  std::size_t i = 0;
  std::string e = Options(a, i, {{"-v", "-l"}, {{"-d", RdmaDevice}, {"-i", [](const std::string& v, const Node&) {
                                                   return Word(v, "a port number", "[0-9]+");
                                                 }}}},
                          n);
  return e.empty() ? NoMore(a, i) : e;
}

// ibstat / show_gids [DEVICE [PORT]].
std::string DevicePort(const Args& a, const Node& n) {
  if (a.size() > 2) return NoMore(a, 2);
  if (a.empty()) return "";
  if (a.size() == 1) return RdmaDevice(a[0], n);
  return RdmaPort(a[0], a[1], n);
}

std::string CmaRoceTos(const Args& a, const Node& n) {
  std::string device, port;
  std::size_t i = 0;
  std::string e = Options(a, i, {{}, {{"-d", [&](const std::string& v, const Node&) { device = v; return std::string(); }},
                                      {"-p", [&](const std::string& v, const Node&) { port = v; return std::string(); }},
                                      {"-t", [](const std::string& v, const Node&) {
                                         return IsNumber(v) && std::stoi(v) <= 255 ? "" : "\"" + v + "\" is not a ToS 0..255";
                                       }}}},
                          n);
  if (!e.empty()) return e;
  if (device.empty() || port.empty()) return "cma_roce_tos needs -d DEVICE and -p PORT";
  if (std::string pe = RdmaPort(device, port, n); !pe.empty()) return pe;
  return NoMore(a, i);
}

// ibportstate -C DEVICE -P PORT -D 0 PORTNUM OP: the local port, by direct route.
std::string Ibportstate(const Args& a, const Node& n) {
  std::string device, port;
  std::size_t i = 0;
  std::string e = Options(a, i, {{"-D"}, {{"-C", [&](const std::string& v, const Node&) { device = v; return std::string(); }},
                                          {"-P", [&](const std::string& v, const Node&) { port = v; return std::string(); }}}},
                          n);
  if (!e.empty()) return e;
  if (device.empty() || port.empty()) return "ibportstate needs -C DEVICE and -P PORT";
  if (std::string pe = RdmaPort(device, port, n); !pe.empty()) return pe;
  if (a.size() - i != 3) return "ibportstate takes DEST PORTNUM OP";
  if (!IsNumber(a[i]) || !IsNumber(a[i + 1])) return "DEST and PORTNUM are numbers";
  static const std::set<std::string> kOps = {"enable", "disable", "reset", "query", "speed", "width"};
  return kOps.contains(a[i + 2]) ? "" : "unknown ibportstate operation " + a[i + 2];
}

std::string Modprobe(const Args& a, const Node&) {
  std::size_t i = a.size() > 0 && a[0] == "-r" ? 1 : 0;
  if (i == a.size()) return "no module";
  for (; i < a.size(); ++i) {
    if (std::string e = Word(a[i], "a module name", "[A-Za-z0-9_-]+"); !e.empty()) return e;
  }
  return "";
}

// echo VALUE > FILE | echo VALUE >> FILE
std::string Echo(const Args& a, const Node& n) {
  if (a.size() != 3 || (a[1] != ">" && a[1] != ">>")) return "echo VALUE > FILE";
  return NodePath(a[2], n);
}

std::string OnePath(const Args& a, const Node& n, std::set<std::string> flags) {
  std::size_t i = 0;
  while (i < a.size() && flags.contains(a[i])) ++i;
  if (i + 1 != a.size()) return "takes one path";
  return NodePath(a[i], n);
}

std::string Mount(const Args& a, const Node& n) {
  if (a.size() != 4 || a[0] != "-t") return "mount -t TYPE SOURCE DIR";
  return NodePath(a[3], n);
}

std::string Chmod(const Args& a, const Node& n) {
  if (a.size() != 2) return "chmod MODE FILE";
  if (std::string e = Word(a[0], "a mode", "[0-7]{3,4}|[ugoa]*[-+=][rwxXst]+"); !e.empty()) return e;
  return NodePath(a[1], n);
}

std::string Chgrp(const Args& a, const Node& n) {
  if (a.size() != 2) return "chgrp GROUP FILE";
  if (std::string e = Word(a[0], "a group", "[A-Za-z0-9_.-]+"); !e.empty()) return e;
  return NodePath(a[1], n);
}

std::string Cpupower(const Args& a, const Node&) {
  if (a.size() != 5 || a[0] != "-c" || a[2] != "frequency-set" || a[3] != "-g") {
    return "cpupower -c CPUS frequency-set -g GOVERNOR";
  }
  if (std::string e = Word(a[1], "a CPU list", "all|[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*"); !e.empty()) return e;
  return Word(a[4], "a governor", "[a-z_]+");
}

std::string Systemctl(const Args& a, const Node&) {
  static const std::set<std::string> kVerbs = {"edit", "restart", "reload", "start", "enable", "status"};
  if (a.size() != 2 || !kVerbs.contains(a[0])) return "systemctl VERB UNIT";
  return Word(a[1], "a unit name", "[A-Za-z0-9@._-]+");
}

std::string Numactl(const Args& a, const Node& n) {
  std::size_t i = 0;
  auto nodes = [](const std::string& v, const Node&) { return Word(v, "a NUMA node list", "[0-9]+(,[0-9]+)*"); };
  if (std::string e = Options(a, i, {{}, {{"--cpunodebind", nodes}, {"--membind", nodes}}}, n); !e.empty()) return e;
  if (i + 1 != a.size() || !IsPlaceholderFor(a[i], "command")) return "numactl ... <command>";
  return "";
}

std::string Prlimit(const Args& a, const Node& n) {
  std::size_t i = 0;
  std::string e = Options(a, i, {{}, {{"--pid", [](const std::string& v, const Node&) { return Word(v, "a pid", "[0-9]+"); }},
                                      {"--memlock", [](const std::string& v, const Node&) {
                                         return Word(v, "SOFT:HARD", "(unlimited|[0-9]+):(unlimited|[0-9]+)");
                                       }}}},
                          n);
  return e.empty() ? NoMore(a, i) : e;
}

std::string Mlxfwmanager(const Args& a, const Node& n) {
  std::size_t i = 0;
  std::string e = Options(a, i, {{"-u", "-y", "--online", "--query"}, {{"-d", PciSlot}}}, n);
  return e.empty() ? NoMore(a, i) : e;
}

std::string Sysctl(const Args& a, const Node&) {
  std::size_t i = a.size() > 0 && a[0] == "-w" ? 1 : 0;
  if (i + 1 != a.size()) return "sysctl [-w] KEY=VALUE";
  return Word(a[i], "KEY=VALUE", "[a-z0-9_./]+=[^ ]+");
}

std::string Mlxconfig(const Args& a, const Node& n) {
  if (a.size() < 3 || a[0] != "-d") return "mlxconfig -d DEVICE (q|set ...)";
  if (a[1].rfind("/dev/mst/", 0) != 0) {
    if (std::string e = PciSlot(a[1], n); !e.empty()) return e;
  }
  return a[2] == "q" || a[2] == "query" || a[2] == "set" || a[2] == "-y" ? "" : "unknown mlxconfig command " + a[2];
}

std::string Anything(const Args&, const Node&) { return ""; }
std::string NoArgs(const Args& a, const Node&) { return NoMore(a, 0); }

const std::map<std::string, Grammar>& Grammars() {
  static const std::map<std::string, Grammar> g = {
      {"lspci", Lspci},
      {"ethtool", Ethtool},
      {"dcb", Dcb},
      {"ip", Ip},
      {"rdma", Rdma},
      {"ibv_devinfo", IbvDevinfo},
      {"ibstat", DevicePort},
      {"show_gids", DevicePort},
      {"sminfo", NoArgs},
      {"ibportstate", Ibportstate},
      {"cma_roce_tos", CmaRoceTos},
      {"modprobe", Modprobe},
      {"echo", Echo},
      {"mkdir", [](const Args& a, const Node& n) { return OnePath(a, n, {"-p"}); }},
      {"rm", [](const Args& a, const Node& n) { return OnePath(a, n, {}); }},
      {"mountpoint", [](const Args& a, const Node& n) { return OnePath(a, n, {"-q"}); }},
      {"mount", Mount},
      {"chmod", Chmod},
      {"chgrp", Chgrp},
      {"cpupower", Cpupower},
      {"systemctl", Systemctl},
      {"numactl", Numactl},
      {"prlimit", Prlimit},
      {"mlxfwmanager", Mlxfwmanager},
      {"sysctl", Sysctl},
      {"mlxconfig", Mlxconfig},
      {"grep", Anything},  // only ever after a pipe, filtering another command's output
      {"ulimit", [](const Args& a, const Node&) { return a == Args{"-l"} ? "" : std::string("ulimit -l"); }},
      {"rping", [](const Args& a, const Node&) {
         return a.size() == 3 && a[0] == "-c" && a[1] == "-a" && IsPlaceholderFor(a[2], "peer") ? ""
                                                                                                 : std::string("rping -c -a <peer address>");
       }},
      {"ib_send_lat", [](const Args& a, const Node&) {
         return a.size() == 4 && a[0] == "-R" && a[1] == "-T" && IsPlaceholderFor(a[2], "tos") ? ""
                                                                                                : std::string("ib_send_lat -R -T <tos> PEER");
       }},
      {"ib_write_bw", [](const Args& a, const Node&) {
         return a.size() == 2 && a[0] == "-R" ? "" : std::string("ib_write_bw -R PEER");
       }},
      {"rdma-healthd", [](const Args& a, const Node&) {
         return a.size() == 2 && a[0] == "probe" ? "" : std::string("rdma-healthd probe PEER");
       }},
  };
  return g;
}

// ---- reading commands out of a fix -------------------------------------------------------------------
struct Command {
  std::string name;
  Args args;
};

// Shell words of a `quoted` span: quotes group and are dropped; "<...>" placeholders stay one word.
std::vector<std::string> ShellWords(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  bool have = false;
  char quote = 0;
  int angle = 0;
  for (char c : s) {
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else {
        cur += c;
      }
      continue;
    }
    if ((c == '\'' || c == '"') && angle == 0) {
      quote = c;
      have = true;
      continue;
    }
    if (c == '<' && (cur.empty() || angle > 0)) ++angle;
    if (c == '>' && angle > 0) --angle;
    if (std::isspace(static_cast<unsigned char>(c)) && angle == 0) {
      if (have) out.push_back(cur);
      cur.clear();
      have = false;
      continue;
    }
    cur += c;
    have = true;
  }
  if (have) out.push_back(cur);
  return out;
}

// The commands a fix names: in `backticks` (every command word there must be known), and bare in the
// text (a known command name starts one). A command's words end at the end of its span, at a
// shell operator (&&, ||, ;, |), and at prose punctuation: a word opening "(" or ending in "," ";" ")".
struct ParsedFix {
  std::vector<Command> commands;
  std::vector<std::string> problems;
};

ParsedFix ParseFix(const std::string& fix) {
  ParsedFix out;
  const auto& grammars = Grammars();
  bool quoted = false;
  std::size_t start = 0;
  while (start <= fix.size()) {
    std::size_t tick = fix.find('`', start);
    const std::string_view span = std::string_view(fix).substr(start, (tick == std::string::npos ? fix.size() : tick) - start);
    std::optional<Command> cur;
    bool at_command_position = quoted;
    auto finish = [&] {
      if (cur) out.commands.push_back(std::move(*cur));
      cur.reset();
    };
    // Prose apostrophes ("distribution's") are not quotes: prose is split on spaces only.
    std::vector<std::string> words;
    if (quoted) {
      words = ShellWords(span);
    } else {
      std::istringstream in{std::string(span)};
      for (std::string w; in >> w;) words.push_back(w);
    }
    for (std::string w : words) {
      if (w == "&&" || w == "||" || w == ";" || w == "|") {
        finish();
        at_command_position = quoted;
        continue;
      }
      if (!w.empty() && w.front() == '(') {
        finish();
        while (!w.empty() && w.front() == '(') w.erase(0, 1);
        at_command_position = quoted;
        if (w.empty()) continue;
      }
      bool ends = false;
      while (!w.empty() && (w.back() == ',' || w.back() == ';' || w.back() == ')') && !IsPlaceholder(w)) {
        w.pop_back();
        ends = true;
      }
      if (w.empty()) {
        if (ends) finish();
        continue;
      }
      if (cur) {
        cur->args.push_back(w);
      } else if (grammars.contains(w)) {
        cur = Command{w, {}};
      } else if (quoted && at_command_position && !(words.size() == 1 && w.back() == ':')) {  // `firmware:`: a config key
        out.problems.push_back("`" + std::string(span) + "`: no grammar for the command \"" + w + "\"");
      }
      at_command_position = false;
      if (ends) {
        finish();
        at_command_position = quoted;
      }
    }
    finish();
    if (tick == std::string::npos) break;
    start = tick + 1;
    quoted = !quoted;
  }
  if (quoted) out.problems.push_back("unbalanced backquotes");
  return out;
}

// ---- the walk --------------------------------------------------------------------------------------
struct Tree {
  std::string name, sysfs, procfs, dcb, dev, config;
};

std::vector<Tree> FixtureTrees() {
  std::vector<std::string> dirs;
  for (const char* group : {"sysfs", "roce", "host"}) {
    const std::string base = testing::ProjectFixture(group);
    for (const auto& e : stdfs::directory_iterator(base)) {
      if (e.is_directory()) dirs.push_back(e.path().string());
    }
  }
  dirs.push_back(testing::ProjectFixture("rxe"));
  if (testing::RealFixturesAvailable()) {
    for (const auto& e : stdfs::directory_iterator(testing::RealFixture("sysfs"))) {
      if (e.is_directory()) dirs.push_back(e.path().string());
    }
  }
  std::sort(dirs.begin(), dirs.end());
  std::vector<Tree> trees;
  for (const std::string& d : dirs) {
    Tree t;
    t.name = d.substr(d.find("fixtures/") + 9);
    t.sysfs = stdfs::is_directory(d + "/sys") ? d + "/sys" : d;
    t.procfs = stdfs::is_directory(d + "/proc") ? d + "/proc" : "/nonexistent-proc";
    t.dcb = stdfs::is_directory(d + "/dcb") ? d + "/dcb" : testing::ProjectFixture("empty-dcb");
    t.dev = stdfs::is_directory(d + "/dev") ? d + "/dev" : "";
    t.config = stdfs::exists(d + "/config.yaml") ? d + "/config.yaml" : "";
    trees.push_back(t);
  }
  return trees;
}

// Policies that make most checks fail on any tree, on top of the tree's own config.
Config StrictA(Config c, const Report& seen) {
  c.Section<PortPolicy>().min_rate_gbps = 800;
  c.Section<RocePolicy>().priority = 5;
  c.Section<RocePolicy>().dscp = 46;
  c.Section<RocePolicy>().trust = TrustMode::kDscp;
  c.Section<RocePolicy>().min_mtu = 9000;
  c.Section<HugepagesPolicy>().min_free = 1'000'000;
  c.Section<MemlockPolicy>().require_unlimited = true;
  c.Section<HostDeviceAccessPolicy>().user = "nobody";
  c.Section<CpuGovernorPolicy>().governor = "performance";
  if (const auto* devices = seen.snapshot.Get<RdmaDevicesFacts>()) {
    for (const RdmaDeviceFacts& d : devices->devices) {
      if (d.hca_type) c.Section<FirmwarePolicy>().rules.push_back({*d.hca_type, "", "999.0.0"});
      if (d.board_id) c.Section<FirmwarePolicy>().rules.push_back({"", *d.board_id, "999.0.0"});
    }
  }
  return c;
}
Config StrictB(Config c) {
  c.Section<PortPolicy>().min_rate_gbps = 1;
  c.Section<RocePolicy>().priority = 3;
  c.Section<RocePolicy>().dscp = 26;
  c.Section<RocePolicy>().trust = TrustMode::kPcp;
  c.Section<HostDeviceAccessPolicy>().group = "rdma";
  c.Section<CpuGovernorPolicy>().governor = "ondemand";
  c.Section<MemlockPolicy>().min_bytes = std::uint64_t{1} << 50;
  return c;
}

TEST(FixCommandsTest, EveryFixOnEveryFixtureTreeRunsAsPrinted) {
  const PluginNames known = RegisteredPluginNames();
  std::map<std::string, int> commands_seen;  // command name -> how many were checked
  std::set<std::string> checks_with_commands;
  int fixes = 0;
  for (const Tree& tree : FixtureTrees()) {
    SCOPED_TRACE(tree.name);
    Config own;
    if (!tree.config.empty()) {
      auto loaded = LoadConfigFile(tree.config, known);
      ASSERT_TRUE(loaded.ok()) << loaded.error().message;
      own = *loaded;
    }
    own.scrape_cache_window = std::chrono::milliseconds(0);
    const NodeFs fs(tree.sysfs, tree.procfs, tree.dcb, tree.dev);
    CollectionEngine first(fs);
    const std::shared_ptr<const Report> seen = first.Collect(std::make_shared<Config>(own));
    for (const Config& config : {own, StrictA(own, *seen), StrictB(own)}) {
      CollectionEngine engine(fs);
      auto shared = std::make_shared<Config>(config);
      engine.Collect(shared);  // a second collection: growth and flap history
      const std::shared_ptr<const Report> report = engine.Collect(shared);
      const Node node = NodeOf(*report, fs);
      for (const VerdictView view : report->verdicts) {
        const CheckResult r = view.ToResult();
        if (r.fix.empty()) continue;
        ++fixes;
        SCOPED_TRACE(r.check + " " + r.subject + " fix: " + r.fix);
        const ParsedFix parsed = ParseFix(r.fix);
        for (const std::string& p : parsed.problems) ADD_FAILURE() << p;
        for (const Command& c : parsed.commands) {
          std::string joined = c.name;
          for (const std::string& a : c.args) joined += " " + a;
          const std::string problem = Grammars().at(c.name)(c.args, node);
          EXPECT_EQ(problem, "") << "`" << joined << "`";
          ++commands_seen[c.name];
          checks_with_commands.insert(r.check);
        }
      }
    }
  }
  // The walk saw the commands whose arguments matter most, from the checks that print them, so it
  // cannot pass by seeing nothing.
  std::ostringstream seen_text;
  for (const auto& [name, count] : commands_seen) seen_text << name << "=" << count << " ";
  for (const char* name : {"dcb", "ethtool", "ip", "lspci", "rdma", "cpupower", "modprobe", "echo", "cma_roce_tos"}) {
    EXPECT_GT(commands_seen[name], 0) << name << " not seen; seen: " << seen_text.str();
  }
  for (const char* check : {"pcie_link", "roce_pfc_priority", "roce_global_pause", "roce_mtu", "roce_tos", "port_active",
                            "roce_trust", "kernel_modules", "device_access", "cpu_governor"}) {
    EXPECT_TRUE(checks_with_commands.contains(check)) << check << " printed no command on any fixture tree";
  }
  std::cout << fixes << " fixes walked; commands checked: " << seen_text.str() << "\n";
}

// The parser and grammars themselves: a wrong argument kind is caught, placeholders pass.
TEST(FixCommandsTest, GrammarsRefuseArgumentsOfTheWrongKind) {
  Node n;
  n.netdevs = {"ens1f0np0"};
  n.ports = {{"mlx5_1", {1}}};
  n.pci_addresses = {"0000:af:00.0"};
  auto problems = [&](const std::string& fix) {
    std::vector<std::string> out;
    const ParsedFix parsed = ParseFix(fix);
    out = parsed.problems;
    for (const Command& c : parsed.commands) {
      if (std::string e = Grammars().at(c.name)(c.args, n); !e.empty()) out.push_back(c.name + ": " + e);
    }
    return out;
  };
  EXPECT_EQ(problems("compare `lspci -vv -s mlx5_1 | grep -E 'LnkCap|LnkSta'`; reseat").size(), 1u);
  EXPECT_TRUE(problems("compare `lspci -vv -s 0000:af:00.0 | grep -E 'LnkCap|LnkSta'`; reseat").empty());
  EXPECT_TRUE(problems("`lspci -vv -s <PCI address of mlx5_1>`").empty());
  EXPECT_EQ(problems("dcb pfc set dev mlx5_1 prio-pfc 3:on").size(), 1u);
  EXPECT_TRUE(problems("dcb pfc set dev ens1f0np0 prio-pfc 3:on").empty());
  EXPECT_EQ(problems("dcb pfc set dev ens1f0np0 prio-pfc 9:on").size(), 1u);
  EXPECT_EQ(problems("ethtool -A mlx5_1 rx off tx off").size(), 1u);
  EXPECT_EQ(problems("see `ethtool -S`").size(), 1u);
  EXPECT_EQ(problems("`rdma link show ens1f0np0/1`").size(), 1u);
  EXPECT_EQ(problems("`rdma link show mlx5_1/2`").size(), 1u);
  EXPECT_TRUE(problems("`rdma link show mlx5_1/1`, `ip link set <netdev> up`").empty());
  EXPECT_EQ(problems("echo 1 > /work/capture/sys/class/net/ens1f0np0/ecn/roce_np/enable/3").size(), 1u);
  EXPECT_EQ(problems("`ibportstate` for IB").size(), 1u);
  EXPECT_EQ(problems("`frobnicate mlx5_1`").size(), 1u);
  EXPECT_TRUE(problems("modprobe rdma_cm && (mountpoint -q /sys/kernel/config || mount -t configfs none "
                       "/sys/kernel/config) && mkdir -p /sys/kernel/config/rdma_cm/mlx5_1 && echo 106 > "
                       "/sys/kernel/config/rdma_cm/mlx5_1/ports/1/default_roce_tos (or `cma_roce_tos -d mlx5_1 -p 1 -t 106`)")
                  .empty());
}

}  // namespace
}  // namespace rdmahd
