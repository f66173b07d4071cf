#include "agent/container_command.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace muster::agent {
namespace {

// The value after `flag` in `argv`, every time it appears.
std::vector<std::string> Values(const std::vector<std::string>& argv, const std::string& flag) {
  std::vector<std::string> out;
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == flag) out.push_back(argv[i + 1]);
  }
  return out;
}

TaskSpec ContainerTask() {
  TaskSpec s;
  s.key = "j7.a1.r0";
  s.argv = {"/bin/sh", "-c", "echo hi"};
  s.run_as = true;
  s.uid = 1001;
  s.gid = 1001;
  s.groups = {1001, 27};
  s.working_dir = "/home/ann/run";
  ContainerSpec c;
  c.image = "nvcr.io/nvidia/pytorch:24.05-py3";
  c.name = "muster-ab12-j7.a1.r0";
  c.podman = "/usr/bin/podman";
  c.runtime = "runc";
  c.cgroup_parent = "/muster/n1.ab12/j7.a1.r0";
  c.mounts = {{"/data/imagenet", "/data", true}, {"/scratch/ann", "/scratch", false}};
  c.devices = {"/dev/nvidia3:/dev/nvidia3", "nvidia.com/gpu=GPU-1234"};
  s.container = c;
  return s;
}

TEST(ContainerCommandTest, RunsAsTheUserInTheTaskGroupWithItsMountsAndDevicesOnly) {
  const TaskSpec s = ContainerTask();
  const std::vector<std::string> argv = PodmanRunArgv(s, "/state/tasks/j7.a1.r0.env");
  ASSERT_GE(argv.size(), 4u);
  EXPECT_EQ(argv[0], "/usr/bin/podman");
  EXPECT_EQ(Values(argv, "--runtime"), std::vector<std::string>{"runc"});
  EXPECT_EQ(Values(argv, "--cgroup-manager"), std::vector<std::string>{"cgroupfs"});
  EXPECT_EQ(Values(argv, "--cgroup-parent"), std::vector<std::string>{"/muster/n1.ab12/j7.a1.r0"});
  EXPECT_EQ(Values(argv, "--name"), std::vector<std::string>{"muster-ab12-j7.a1.r0"});
  EXPECT_EQ(Values(argv, "--user"), std::vector<std::string>{"1001:1001"});
  EXPECT_EQ(Values(argv, "--group-add"), std::vector<std::string>{"27"}) << "the primary group is not repeated";
  EXPECT_EQ(Values(argv, "--pull"), std::vector<std::string>{"never"}) << "pulls are the shim's, with progress";
  EXPECT_EQ(Values(argv, "--pid"), std::vector<std::string>{"host"});
  EXPECT_EQ(Values(argv, "--cap-drop"), std::vector<std::string>{"all"});
  EXPECT_EQ(Values(argv, "--env-file"), std::vector<std::string>{"/state/tasks/j7.a1.r0.env"});
  EXPECT_TRUE(Values(argv, "--env").empty()) << "no job variable comes from Podman's own environment";
  EXPECT_EQ(Values(argv, "--workdir"), std::vector<std::string>{"/home/ann/run"});
  EXPECT_EQ(Values(argv, "--volume"), (std::vector<std::string>{"/home/ann/run:/home/ann/run",
                                                                "/data/imagenet:/data:ro", "/scratch/ann:/scratch"}));
  EXPECT_EQ(Values(argv, "--device"),
            (std::vector<std::string>{"/dev/nvidia3:/dev/nvidia3", "nvidia.com/gpu=GPU-1234"}));
  // The image, then the command, last.
  const std::vector<std::string> tail(argv.end() - 4, argv.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"nvcr.io/nvidia/pytorch:24.05-py3", "/bin/sh", "-c", "echo hi"}));
  const std::vector<std::string> script = PodmanRunArgv(s, "/e", {"/.muster/script"});
  EXPECT_EQ(script.back(), "/.muster/script");
}

TEST(ContainerCommandTest, WithoutRunAsTheImageUserStays) {
  TaskSpec s = ContainerTask();
  s.run_as = false;
  s.container->cgroup_parent.clear();
  s.container->runtime.clear();
  const std::vector<std::string> argv = PodmanRunArgv(s, "/e");
  EXPECT_TRUE(Values(argv, "--user").empty());
  EXPECT_TRUE(Values(argv, "--cgroup-manager").empty()) << "Podman's own manager when it picks the group";
  EXPECT_TRUE(Values(argv, "--runtime").empty());
}

TEST(ContainerCommandTest, PullInspectAndRemoveNameTheImageAndContainer) {
  TaskSpec s = ContainerTask();
  s.container->auth_file = "/state/auth/ann.json";
  const std::vector<std::string> pull = PodmanPullArgv(*s.container);
  EXPECT_EQ(Values(pull, "--authfile"), std::vector<std::string>{"/state/auth/ann.json"});
  EXPECT_EQ(pull.back(), "nvcr.io/nvidia/pytorch:24.05-py3");
  EXPECT_EQ(PodmanImageExistsArgv(*s.container).back(), "nvcr.io/nvidia/pytorch:24.05-py3");
  EXPECT_EQ(PodmanInspectArgv(*s.container).back(), "muster-ab12-j7.a1.r0");
  const std::vector<std::string> rm = PodmanRemoveArgv(*s.container);
  EXPECT_EQ(rm.back(), "muster-ab12-j7.a1.r0");
  EXPECT_NE(std::find(rm.begin(), rm.end(), "--force"), rm.end());
}

TEST(ContainerCommandTest, EnvFileHoldsOneLinePerVariableAndRefusesLineBreaks) {
  const StatusOr<std::string> text = ContainerEnvFile({{"A", "1"}, {"B", "x=y z"}});
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "A=1\nB=x=y z\n");
  for (const std::string& value : {std::string("-----BEGIN\nabc\n"), std::string("/x.so \r"), std::string("a\0b", 3)}) {
    const StatusOr<std::string> refused = ContainerEnvFile({{"A", "1"}, {"LD_PRELOAD", value}});
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("LD_PRELOAD"), std::string::npos) << refused.status().ToString();
  }
}

TEST(ContainerCommandTest, AuthFileHoldsTheLoginInBase64) {
  // base64("ann:s3cret!") and base64("a:b") (padding).
  EXPECT_EQ(RegistryAuthFile("nvcr.io", "ann", "s3cret!"), R"({"auths":{"nvcr.io":{"auth":"YW5uOnMzY3JldCE="}}})");
  EXPECT_EQ(RegistryAuthFile("r:5000", "a", "b"), R"({"auths":{"r:5000":{"auth":"YTpi"}}})");
}

TEST(ContainerCommandTest, NamesAndExitCodes) {
  EXPECT_EQ(ContainerName("muster-ab12-", "j7.a1.r0"), "muster-ab12-j7.a1.r0");
  EXPECT_EQ(ContainerName("m-", "j/7 a"), "m-j_7_a");
  const ContainerExit killed = ClassifyPodmanExit(137);
  EXPECT_EQ(killed.signal, 9);
  EXPECT_FALSE(killed.maybe_launch);
  EXPECT_EQ(ClassifyPodmanExit(3).exit_code, 3);
  EXPECT_EQ(ClassifyPodmanExit(3).signal, 0);
  EXPECT_FALSE(ClassifyPodmanExit(3).maybe_launch);
  for (int code : {125, 126, 127}) {
    EXPECT_TRUE(ClassifyPodmanExit(code).maybe_launch) << code;
    EXPECT_EQ(ClassifyPodmanExit(code).exit_code, code) << "the job's own, when its container had started";
  }
}

}  // namespace
}  // namespace muster::agent
