#include "agent/root_exec.h"

#include <sys/wait.h>

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace muster::agent {
namespace {

TEST(RootExecTest, TheEnvironmentIsTheAllowlistWithAFixedPath) {
  std::vector<std::string> from = {"PATH=/home/mallory/bin:/usr/bin",
                                   "LD_PRELOAD=/home/mallory/ev.so",
                                   "BASH_ENV=/home/mallory/rc",
                                   "IFS=x",
                                   "PYTHONPATH=/home/mallory",
                                   "HOME=/root",
                                   "CONTAINERS_CONF=/etc/muster/containers.conf",
                                   "LANG=C.UTF-8",
                                   "NOEQUALS"};
  std::vector<char*> env;
  for (std::string& kv : from) env.push_back(kv.data());
  env.push_back(nullptr);
  const std::vector<std::string> out = RootEnvironment({"CONTAINERS_CONF=/run/x.conf"}, env.data());
  EXPECT_EQ(out, (std::vector<std::string>{std::string("PATH=") + kRootPath, "HOME=/root", "LANG=C.UTF-8",
                                           "CONTAINERS_CONF=/run/x.conf"}));
  for (const char* name : {"PATH", "LD_PRELOAD", "BASH_ENV", "IFS", "PYTHONPATH", "ENV"}) {
    EXPECT_FALSE(RootEnvironmentAllows(name)) << name;
  }
}

TEST(RootExecTest, ProgramsAreFoundByAbsolutePathOnly) {
  auto sh = FindRootProgram("sh", "--test");
  ASSERT_TRUE(sh.ok()) << sh.status().ToString();
  EXPECT_EQ(sh->front(), '/');
  EXPECT_EQ(*FindRootProgram("/bin/sh", "--test"), "/bin/sh");
  const Status relative = FindRootProgram("bin/podman", "--podman").status();
  EXPECT_EQ(relative.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(relative.message().find("--podman"), std::string::npos) << relative.ToString();
  EXPECT_EQ(FindRootProgram("no-such-program-muster", "--podman").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(FindRootProgram("/etc", "--podman").status().code(), StatusCode::kNotFound) << "not a file";
  EXPECT_LT(RunRootProgram({"sh", "-c", "true"}, {}, {}), 0) << "a bare name is never searched for";
}

TEST(RootExecTest, AChildGetsExactlyTheEnvironmentGiven) {
  auto [code, out] = RunRootCommand({"/usr/bin/env"}, {"CONTAINERS_CONF=/run/c.conf"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find(std::string("PATH=") + kRootPath + "\n"), std::string::npos) << out;
  EXPECT_NE(out.find("CONTAINERS_CONF=/run/c.conf\n"), std::string::npos) << out;
  const long lines = std::count(out.begin(), out.end(), '\n');
  EXPECT_LE(lines, 11) << out;  // PATH and the ten allowed names at most
  auto [failed, said] = RunRootCommand({"/bin/sh", "-c", "echo out; exit 3"});
  EXPECT_EQ(failed, 3);
  EXPECT_EQ(said, "out\n");
}

}  // namespace
}  // namespace muster::agent
