#include "agent/cgroup.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

namespace muster::agent {
namespace fs = std::filesystem;

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Status WriteFile(const std::string& path, const std::string& value) {
  std::ofstream out(path);
  if (!out) return Internal("cannot open " + path + ": " + std::strerror(errno));
  out << value;
  out.flush();
  if (!out) return Internal("cannot write \"" + value + "\" to " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

bool HasWord(const std::string& text, const std::string& word) {
  std::istringstream in(text);
  std::string w;
  while (in >> w) {
    if (w == word) return true;
  }
  return false;
}

// What the mount table says of the cgroup hierarchies.
struct CgroupMounts {
  struct V1 {
    std::string controller;  // "memory", "cpu", "pids" or "devices"
    std::string mount;
  };
  std::string unified;              // the v2 hierarchy's mount, "" when none
  std::vector<V1> v1;               // v1 hierarchies of the controllers the driver uses
  std::vector<std::string> others;  // v1 hierarchies it does not use
  bool favordynmods = false;        // on any v1 hierarchy (the lock it relaxes is global)

  // The version the driver uses: v2 when the unified hierarchy has the
  // memory controller, or when no v1 memory hierarchy is mounted.
  bool UsesV2() const {
    if (unified.empty()) return false;
    const bool v1_memory = std::any_of(v1.begin(), v1.end(), [](const V1& h) { return h.controller == "memory"; });
    return !v1_memory || HasWord(ReadFile(unified + "/cgroup.controllers"), "memory");
  }
};

StatusOr<CgroupMounts> ReadCgroupMounts(const std::string& mounts_file) {
  std::ifstream in(mounts_file);
  if (!in) return FailedPrecondition("cannot read " + mounts_file);
  CgroupMounts m;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string dev, mount, type, opts;
    f >> dev >> mount >> type >> opts;
    if (type == "cgroup2") m.unified = mount;
    if (type != "cgroup") continue;
    std::istringstream o(opts);
    std::string opt;
    bool used = false;
    while (std::getline(o, opt, ',')) {
      if (opt == "memory" || opt == "cpu" || opt == "pids" || opt == "devices")
        m.v1.push_back({opt, mount}), used = true;
      if (opt == "favordynmods") m.favordynmods = true;
    }
    if (!used) m.others.push_back(mount);
  }
  return m;
}

// The value after `key` in a "key value" per line file.
int64_t KeyValue(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string k;
  int64_t v = 0;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  return 0;
}

// The pids in `dir`'s cgroup.procs and, when `recursive`, in the groups
// below it; `keep` decides which groups of the subtree count.
void CollectProcesses(const std::string& dir, bool recursive, const std::function<bool(const std::string&)>& keep,
                      std::vector<pid_t>& out) {
  if (keep(dir)) {
    std::istringstream in(ReadFile(dir + "/cgroup.procs"));
    pid_t p = 0;
    while (in >> p) out.push_back(p);
  }
  if (!recursive) return;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory(ec)) CollectProcesses(e.path().string(), true, keep, out);
  }
}

// Removes `dir` and the groups below it, deepest first. false with errno
// (EBUSY: processes are still leaving) when one stays.
bool RemoveTree(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> children;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory(ec)) children.push_back(e.path().string());
  }
  bool ok = true;
  int err = 0;
  for (const std::string& c : children) {
    if (!RemoveTree(c)) ok = false, err = errno;
  }
  if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return ok ? true : (errno = err, false);
  return false;
}

}  // namespace

void SignalGroupTree(const std::string& dir, int sig, bool containers_only) {
  const auto all = [](const std::string&) { return true; };
  std::vector<pid_t> pids;
  if (!containers_only) {
    CollectProcesses(dir, true, all, pids);
  } else {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string base = e.path().filename().string();
      if (e.is_directory(ec) && base.rfind("libpod-", 0) == 0 && base.rfind("libpod-conmon", 0) != 0) {
        CollectProcesses(e.path().string(), true, all, pids);
      }
    }
  }
  const pid_t self = ::getpid();
  for (pid_t p : pids) {
    if (p != self) ::kill(p, sig);
  }
}

StatusOr<std::string> ResolveCgroupRoot(const std::string& root, const std::string& proc_cgroup,
                                        const std::string& mounts_file) {
  if (root != "self") {
    std::string path = root;
    while (!path.empty() && path.front() == '/') path.erase(path.begin());
    while (!path.empty() && path.back() == '/') path.pop_back();
    if (path.empty())
      return InvalidArgument("cgroup-root: must name a group below the hierarchy's root, or self", "cgroup-root");
    std::istringstream parts(path);
    std::string part;
    while (std::getline(parts, part, '/')) {
      if (part.empty() || part == "." || part == "..") {
        return InvalidArgument("cgroup-root: \"" + root + "\" has an empty, . or .. part", "cgroup-root");
      }
    }
    return path;
  }
  // The version Detect drives.
  auto mounts = ReadCgroupMounts(mounts_file);
  if (!mounts.ok()) return FailedPrecondition("cgroup-root self: " + mounts.status().message());
  const bool v2 = mounts->UsesV2();
  const std::string& unified = mounts->unified;
  std::string line;
  // Our own group: v2's "0::/path" line, or v1's memory line "4:memory:/path".
  std::ifstream groups(proc_cgroup);
  if (!groups) return FailedPrecondition("cgroup-root self: cannot read " + proc_cgroup);
  std::string own;
  while (std::getline(groups, line)) {
    const size_t first = line.find(':');
    const size_t second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const bool match = v2 ? line.compare(0, first, "0") == 0 && controllers.empty()
                          : ("," + controllers + ",").find(",memory,") != std::string::npos;
    if (match) own = line.substr(second + 1);
  }
  while (!own.empty() && own.front() == '/') own.erase(own.begin());
  // Moved there by an earlier start of this same agent process image.
  if (v2 && own.size() >= 6 && own.compare(own.size() - 6, 6, "/agent") == 0) own.resize(own.size() - 6);
  if (own.empty()) {
    return FailedPrecondition(
        "cgroup-root self: the agent runs in the root cgroup, so it has no group of its own to put tasks below; "
        "start it from a systemd unit with Delegate=yes (muster-agent.service), or give cgroup-root a path");
  }
  if (v2) {
    const std::string agent_dir = unified + "/" + own + "/agent";
    std::error_code ec;
    fs::create_directories(agent_dir, ec);
    if (ec) return FailedPrecondition("cgroup-root self: cannot create " + agent_dir + ": " + ec.message());
    if (Status s = WriteFile(agent_dir + "/cgroup.procs", std::to_string(::getpid())); !s.ok()) {
      return FailedPrecondition("cgroup-root self: cannot move the agent into " + agent_dir + ": " + s.message());
    }
  }
  return own + "/jobs";
}

CgroupDriver::~CgroupDriver() = default;

StatusOr<std::unique_ptr<CgroupDriver>> CgroupDriver::ForV2(const std::string& unified_mount,
                                                            const std::string& parent) {
  std::unique_ptr<CgroupDriver> d(new CgroupDriver());
  d->version_ = 2;
  d->parent_ = parent;
  d->unified_ = unified_mount;
  d->hierarchies_ = {{"", unified_mount}};
  const std::string available = ReadFile(unified_mount + "/cgroup.controllers");
  std::error_code ec;
  fs::create_directories(unified_mount + "/" + parent, ec);
  if (ec) return FailedPrecondition("cannot create cgroup " + unified_mount + "/" + parent + ": " + ec.message());
  // Delegate the controllers down to the parent's children, level by level.
  // The root may refuse one (busy or not offered); what the parent then
  // offers is what we have.
  std::vector<std::string> levels = {unified_mount};
  std::string path = unified_mount;
  std::istringstream parts(parent);
  std::string part;
  while (std::getline(parts, part, '/')) {
    if (part.empty()) continue;
    path += "/" + part;
    levels.push_back(path);
  }
  for (const char* c : {"memory", "cpu", "pids"}) {
    if (!HasWord(available, c)) continue;
    for (const std::string& level : levels) (void)WriteFile(level + "/cgroup.subtree_control", std::string("+") + c);
  }
  const std::string enabled = ReadFile(unified_mount + "/" + parent + "/cgroup.subtree_control");
  d->has_memory_ = HasWord(enabled, "memory");
  d->has_cpu_ = HasWord(enabled, "cpu");
  d->has_pids_ = HasWord(enabled, "pids");
  d->has_devices_ = true;  // a BPF device program, on any v2 kernel this runs on
  return d;
}

StatusOr<std::unique_ptr<CgroupDriver>> CgroupDriver::Detect(const std::string& parent,
                                                             const std::string& mounts_file) {
  ASSIGN_OR_RETURN(CgroupMounts mounts, ReadCgroupMounts(mounts_file));
  if (mounts.UsesV2()) return ForV2(mounts.unified, parent);
  if (mounts.v1.empty()) return FailedPrecondition("no cgroup hierarchy is mounted (see " + mounts_file + ")");
  std::unique_ptr<CgroupDriver> d(new CgroupDriver());
  d->version_ = 1;
  d->parent_ = parent;
  d->favordynmods_ = mounts.favordynmods;
  d->other_mounts_ = std::move(mounts.others);
  if (!mounts.unified.empty()) d->other_mounts_.push_back(mounts.unified);
  for (const CgroupMounts::V1& h : mounts.v1) {
    std::error_code ec;
    fs::create_directories(h.mount + "/" + parent, ec);
    if (ec) return FailedPrecondition("cannot create cgroup " + h.mount + "/" + parent + ": " + ec.message());
    d->hierarchies_.push_back({h.controller, h.mount});
    if (h.controller == "memory") d->has_memory_ = true;
    if (h.controller == "cpu") d->has_cpu_ = true;
    if (h.controller == "pids") d->has_pids_ = true;
    if (h.controller == "devices") d->has_devices_ = true;
  }
  // Processes are tracked in the memory hierarchy; it must come first.
  std::stable_partition(d->hierarchies_.begin(), d->hierarchies_.end(),
                        [](const Hierarchy& h) { return h.controller == "memory"; });
  return d;
}

std::string CgroupDriver::Describe() const {
  std::string enforced;
  auto add = [&](bool has, const char* c) {
    if (has) enforced += (enforced.empty() ? "" : ", ") + std::string(c);
  };
  add(has_memory_, "memory");
  add(has_cpu_, "cpu");
  add(has_pids_, "pids");
  add(has_devices_, "devices");
  std::string out = (version_ == 1 ? "v1 (" : "v2 (") + (enforced.empty() ? "no limits" : enforced) + ")";
  if (version_ == 1 && !favordynmods_) {
    out +=
        "; each task start waits for the kernel's RCU grace period to join its cgroup (10 to 25 ms): "
        "mount a cgroup hierarchy with favordynmods to avoid it (docs/operations.md)";
  }
  return out;
}

std::vector<std::string> CgroupDriver::Dirs(const std::string& name) const {
  std::vector<std::string> out;
  for (const Hierarchy& h : hierarchies_) out.push_back(h.mount + "/" + parent_ + (name.empty() ? "" : "/" + name));
  return out;
}

std::string CgroupDriver::ProcsDir(const std::string& name) const { return Dirs(name).front(); }

std::string CgroupDriver::MemoryDir(const std::string& name) const {
  for (const Hierarchy& h : hierarchies_) {
    if (h.controller == "memory" || h.controller.empty()) return h.mount + "/" + parent_ + "/" + name;
  }
  return {};
}

StatusOr<std::vector<std::string>> CgroupDriver::Create(const std::string& name, const CgroupLimits& limits,
                                                        bool nested) {
  if (name.empty() || name.find('/') != std::string::npos || name[0] == '.') {
    return InvalidArgument("bad cgroup name \"" + name + "\"");
  }
  std::vector<std::string> procs;
  for (const Hierarchy& h : hierarchies_) {
    const bool v2 = h.controller.empty();
    // v1: the memory hierarchy always (it tracks the processes and counts
    // OOM kills); cpu and pids only when there is a limit to set there.
    if (!v2 && ((h.controller == "cpu" && limits.cpu_milli <= 0) || (h.controller == "pids" && limits.pids <= 0) ||
                (h.controller == "devices" && limits.denied_devices.empty()))) {
      continue;
    }
    const std::string dir = h.mount + "/" + parent_ + "/" + name;
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return Internal("cannot create cgroup " + dir + ": " + std::strerror(errno));
    }
    if (v2 && nested) {
      // The controllers go on to the container's group; processes may then
      // live only in leaves, so the shim gets one.
      for (const char* c : {"memory", "cpu", "pids"})
        (void)WriteFile(dir + "/cgroup.subtree_control", std::string("+") + c);
      const std::string leaf = dir + "/supervisor";
      if (::mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) {
        return Internal("cannot create cgroup " + leaf + ": " + std::strerror(errno));
      }
      procs.push_back(leaf + "/cgroup.procs");
    } else {
      procs.push_back(dir + "/cgroup.procs");
    }
    if ((v2 || h.controller == "memory") && has_memory_ && limits.memory_bytes > 0) {
      const std::string bytes = std::to_string(limits.memory_bytes);
      if (v2) {
        RETURN_IF_ERROR(WriteFile(dir + "/memory.max", bytes));
        (void)WriteFile(dir + "/memory.swap.max", "0");   // the limit is real memory, no swapping past it
        (void)WriteFile(dir + "/memory.oom.group", "1");  // an OOM ends the whole task
      } else {
        RETURN_IF_ERROR(WriteFile(dir + "/memory.limit_in_bytes", bytes));
        (void)WriteFile(dir + "/memory.memsw.limit_in_bytes", bytes);
      }
    }
    if ((v2 || h.controller == "cpu") && has_cpu_ && limits.cpu_milli > 0) {
      const int64_t period = 100'000;
      const int64_t quota = std::max<int64_t>(1000, limits.cpu_milli * period / 1000);
      if (v2) {
        RETURN_IF_ERROR(WriteFile(dir + "/cpu.max", std::to_string(quota) + " " + std::to_string(period)));
      } else {
        RETURN_IF_ERROR(WriteFile(dir + "/cpu.cfs_period_us", std::to_string(period)));
        RETURN_IF_ERROR(WriteFile(dir + "/cpu.cfs_quota_us", std::to_string(quota)));
      }
    }
    if ((v2 || h.controller == "pids") && has_pids_ && limits.pids > 0) {
      RETURN_IF_ERROR(WriteFile(dir + "/pids.max", std::to_string(limits.pids)));
    }
    if (!limits.denied_devices.empty()) {
      if (v2) {
        RETURN_IF_ERROR(AttachDeviceFilter(dir, limits.denied_devices));
      } else if (h.controller == "devices") {
        for (const std::string& line : DevicesDenyLines(limits.denied_devices)) {
          RETURN_IF_ERROR(WriteFile(dir + "/devices.deny", line));
        }
      }
    }
  }
  return procs;
}

Status CgroupDriver::LimitAllPids(int64_t pids) {
  if (!has_pids_) return Status::Ok();
  for (const Hierarchy& h : hierarchies_) {
    if (h.controller.empty() || h.controller == "pids") {
      RETURN_IF_ERROR(WriteFile(h.mount + "/" + parent_ + "/pids.max", std::to_string(pids)));
    }
  }
  return Status::Ok();
}

std::vector<pid_t> CgroupDriver::Processes(const std::string& name) const {
  std::vector<pid_t> out;
  CollectProcesses(
      ProcsDir(name), !name.empty(), [](const std::string&) { return true; }, out);
  return out;
}

void CgroupDriver::SignalContainer(const std::string& name, int sig) const {
  SignalGroupTree(ProcsDir(name), sig, /*containers_only=*/true);
}

int64_t CgroupDriver::OomKills(const std::string& name) const {
  const std::string dir = MemoryDir(name);
  if (dir.empty()) return 0;
  if (version_ == 2) return KeyValue(ReadFile(dir + "/memory.events"), "oom_kill");
  return KeyValue(ReadFile(dir + "/memory.oom_control"), "oom_kill");
}

void CgroupDriver::Signal(const std::string& name, int sig, pid_t spare) const {
  for (pid_t p : Processes(name)) {
    if (p != spare) ::kill(p, sig);
  }
}

bool CgroupDriver::KillAll(const std::string& name) const {
  const std::string dir = ProcsDir(name);
  if (!fs::exists(dir)) return true;
  const bool has_kill_file = version_ == 2 && fs::exists(dir + "/cgroup.kill");
  for (int i = 0; i < 500; ++i) {
    const std::vector<pid_t> procs = Processes(name);
    if (procs.empty()) return true;
    if (has_kill_file) {
      (void)WriteFile(dir + "/cgroup.kill", "1");
    } else {
      for (pid_t p : procs) ::kill(p, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(i < 20 ? 2 : 10));
  }
  return Processes(name).empty();
}

Status CgroupDriver::Remove(const std::string& name) {
  bool busy = false;
  std::vector<std::string> dirs = Dirs(name);
  for (const std::string& m : other_mounts_) dirs.push_back(m + "/" + parent_ + "/" + name);
  for (const std::string& dir : dirs) {
    if (RemoveTree(dir)) continue;
    if (errno != EBUSY) return Internal("cannot remove cgroup " + dir + ": " + std::strerror(errno));
    busy = true;
  }
  if (busy) return Status(StatusCode::kUnavailable, "cgroup " + name + " is still busy");
  return Status::Ok();
}

std::vector<std::string> CgroupDriver::List() const {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(ProcsDir(""), ec)) {
    if (e.is_directory()) out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace muster::agent
