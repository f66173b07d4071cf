#include "cli/flags_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

namespace muster::cli {
namespace {

struct Flags {
  std::string server = "from-env", name;
  std::vector<std::string> features;
  bool spot = true;
  int port = 0;
};

// Parses `args` (after the program name), then applies the file holding `yaml`.
Status Apply(const std::vector<std::string>& args, const std::string& yaml, Flags& f) {
  CLI::App app("agent");
  app.add_option("--server", f.server);
  app.add_option("--name", f.name);
  app.add_option("--feature", f.features);
  app.add_flag("--spot", f.spot);
  app.add_option("--log-port", f.port);
  std::vector<std::string> argv = args;
  std::reverse(argv.begin(), argv.end());  // CLI11 takes them last first
  app.parse(argv);
  const std::string path = ::testing::TempDir() + "/flags_" + std::to_string(::getpid()) + ".yaml";
  std::ofstream(path) << yaml;
  return ReadFlagsFile(path, app);
}

TEST(FlagsFile, TheFileGivesWhatTheCommandLineDidNot) {
  Flags f;
  ASSERT_TRUE(
      Apply({"--name", "from-cli"},
            "server: https://muster:8470\nname: from-file\nfeature: [ib, nvlink]\nspot: false\nlog-port: 9000\n", f)
          .ok());
  EXPECT_EQ(f.server, "https://muster:8470");  // over the environment's default
  EXPECT_EQ(f.name, "from-cli");
  EXPECT_EQ(f.features, (std::vector<std::string>{"ib", "nvlink"}));
  EXPECT_FALSE(f.spot);
  EXPECT_EQ(f.port, 9000);
  Flags g;
  ASSERT_TRUE(Apply({"--feature", "x"}, "feature: ib\n", g).ok());
  EXPECT_EQ(g.features, std::vector<std::string>{"x"});
}

TEST(FlagsFile, ErrorsNameTheFileAndTheKey) {
  Flags f;
  Status s = Apply({}, "bogus: 1\n", f);
  EXPECT_NE(s.message().find(": bogus: no such flag"), std::string::npos) << s.ToString();
  s = Apply({}, "log-port: many\n", f);
  EXPECT_NE(s.message().find(": log-port: "), std::string::npos) << s.ToString();
  s = Apply({}, "name: [a, b]\n", f);
  EXPECT_NE(s.message().find(": name: must be one value"), std::string::npos) << s.ToString();
  s = Apply({}, "- a\n", f);
  EXPECT_NE(s.message().find("must be a mapping"), std::string::npos) << s.ToString();
  s = Apply({}, "name: [\n", f);
  EXPECT_NE(s.message().find("not YAML"), std::string::npos) << s.ToString();
  EXPECT_TRUE(Apply({}, "", f).ok());
}

}  // namespace
}  // namespace muster::cli
