// A container task's groups below its own (agent/cgroup.h): created,
// walked, signalled and removed as a tree, on whichever cgroup version the
// machine has (v1 here; v2 on the GPU machine, where this binary was run
// too: docs/testing.md).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "agent/cgroup.h"
#include "wait_for.h"

namespace muster::agent {
namespace {

namespace fs = std::filesystem;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A child that joins the group whose cgroup.procs files are `procs`, then
// runs `body` (sleeps when it returns).
pid_t ChildIn(const std::vector<std::string>& procs, void (*body)() = nullptr) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (const std::string& p : procs) std::ofstream(p) << ::getpid();
    if (body) body();
    ::pause();
    ::_exit(0);
  }
  return pid;
}

void Hog() {
  std::vector<std::string> chunks;
  for (int i = 0; i < 1024; ++i) chunks.emplace_back(size_t{1} << 20, 'x');  // 1 GiB
}

TEST(CgroupTreeTest, AContainerTasksGroupsAreOneTree) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for cgroups";
  const std::string parent = "muster-tree-test-" + std::to_string(::getpid());
  auto driver = CgroupDriver::Detect(parent);
  ASSERT_TRUE(driver.ok()) << driver.status().ToString();
  CgroupDriver& d = **driver;
  CgroupLimits limits;
  limits.memory_bytes = 64 << 20;
  limits.pids = 64;
  auto procs = d.Create("t1", limits, /*nested=*/true);
  ASSERT_TRUE(procs.ok()) << procs.status().ToString();
  const std::string first = (*procs)[0];
  // The shim's group: on v2 a leaf of its own below the task's (a group
  // that hands controllers down may hold no processes).
  const std::string task_dir = fs::path(first).parent_path().filename() == "supervisor"
                                   ? fs::path(first).parent_path().parent_path().string()
                                   : fs::path(first).parent_path().string();
  EXPECT_EQ(fs::path(first).parent_path().filename() == "supervisor", d.version() == 2) << first;
  if (d.version() == 2) {
    EXPECT_NE(Read(task_dir + "/cgroup.subtree_control").find("memory"), std::string::npos)
        << "the memory limit reaches the container's group";
  }
  EXPECT_EQ(d.PathOf("t1"), "/" + parent + "/t1");
  const pid_t shim = ChildIn(*procs);
  // What Podman does: a container group below the task's, in each hierarchy.
  std::vector<std::string> container_procs;
  for (const std::string& p : *procs) {
    std::string dir = fs::path(p).parent_path().string();
    if (fs::path(dir).filename() == "supervisor") dir = fs::path(dir).parent_path().string();
    fs::create_directories(dir + "/libpod-abc");
    container_procs.push_back(dir + "/libpod-abc/cgroup.procs");
  }
  const pid_t payload = ChildIn(container_procs);
  std::vector<pid_t> seen;
  muster::testing::WaitFor([&] { return (seen = d.Processes("t1")).size() >= 2; }, std::chrono::seconds(2));
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<pid_t>{std::min(shim, payload), std::max(shim, payload)})) << "the whole tree";
  // A stop signals the container's processes only.
  d.SignalContainer("t1", SIGTERM);
  int status = 0;
  ASSERT_EQ(::waitpid(payload, &status, 0), payload);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
  EXPECT_EQ(::waitpid(shim, &status, WNOHANG), 0) << "the shim was signalled";
  // The task's memory limit binds the container's group; on v2 the task's
  // own OOM counter sees a kill below it (v1 counts it in the child).
  const pid_t hog = ChildIn(container_procs, Hog);
  ASSERT_EQ(::waitpid(hog, &status, 0), hog);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the 64 MiB limit did not hold";
  if (d.version() == 2) {
    EXPECT_GT(d.OomKills("t1"), 0);
  }
  EXPECT_TRUE(d.KillAll("t1"));
  (void)::waitpid(shim, nullptr, 0);
  Status removed = d.Remove("t1");
  if (!removed.ok()) muster::testing::WaitFor([&] { return (removed = d.Remove("t1")).ok(); }, std::chrono::seconds(2));
  EXPECT_TRUE(removed.ok()) << removed.ToString();
  EXPECT_FALSE(fs::exists(task_dir)) << "the tree is gone";
  // The driver's parent group, in every hierarchy it made it in.
  std::error_code ec;
  ::rmdir(("/sys/fs/cgroup/" + parent).c_str());
  for (const auto& h : fs::directory_iterator("/sys/fs/cgroup", ec)) ::rmdir((h.path() / parent).c_str());
}

}  // namespace
}  // namespace muster::agent
