#include "cli/help_export.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace muster::cli {
namespace {

// A small tree shaped like muster's: a command with flags, one with nested
// commands, one hidden.
struct Tree {
  CLI::App app{"muster: a GPU cluster scheduler"};
  std::string queue, file, out;
  int gpus = 0;
  bool wait = false;
  Tree() {
    CLI::App* submit = app.add_subcommand("submit", "Submit a job");
    submit->add_option("-q,--queue", queue, "The queue (team)");
    submit->add_option("--gpus", gpus, "GPUs per replica");
    submit->add_flag("--wait", wait, "Wait until it ends");
    submit->add_option("file", file, "The spec file");
    CLI::App* get = app.add_subcommand("get", "Show objects");
    CLI::App* jobs = get->add_subcommand("jobs", "List jobs");
    jobs->add_option("-o,--output", out, "Output format: a \\backslash and .dot");
    get->add_subcommand("nodes", "List nodes");
    app.add_subcommand("task-internal", "Internal")->group("");
  }
};

TEST(ManPage, TheRootListsEveryVisibleCommand) {
  Tree t;
  const std::string page = ManPage(t.app, nullptr, "muster 0.1.0");
  EXPECT_NE(page.find(".TH MUSTER 1"), std::string::npos);
  EXPECT_NE(page.find("\\fBmuster\\-submit\\fR(1)\nSubmit a job"), std::string::npos) << page;
  EXPECT_NE(page.find("\\fBmuster\\-get\\fR(1)"), std::string::npos);
  EXPECT_EQ(page.find("task"), std::string::npos) << "a hidden command is not listed";
}

TEST(ManPage, ACommandsPageHasItsOptionsAndItsNestedCommands) {
  Tree t;
  const std::string submit = ManPage(t.app, t.app.get_subcommand("submit"), "muster 0.1.0");
  EXPECT_NE(submit.find(".TH MUSTER-SUBMIT 1"), std::string::npos);
  EXPECT_NE(submit.find("\\fB\\-q\\fR, \\fB\\-\\-queue\\fR \\fITEXT\\fR\nThe queue (team)"), std::string::npos)
      << submit;
  EXPECT_NE(submit.find("\\fB\\-\\-wait\\fR\nWait until it ends"), std::string::npos) << submit;
  EXPECT_NE(submit.find("\\fBmuster submit\\fR \\fIfile\\fR [\\fIOPTIONS\\fR]"), std::string::npos) << submit;
  const std::string get = ManPage(t.app, t.app.get_subcommand("get"), "muster 0.1.0");
  EXPECT_NE(get.find(".SS muster get jobs"), std::string::npos) << get;
  EXPECT_NE(get.find(".SS muster get nodes"), std::string::npos);
  // roff's escapes: a backslash printed as \e, a minus as \-; no line starts a request.
  EXPECT_NE(get.find("a \\ebackslash and .dot"), std::string::npos) << get;
}

TEST(ManPage, PagesAreWrittenOnePerCommandOrTheDirectoryIsNamed) {
  Tree t;
  const std::string dir = (std::filesystem::temp_directory_path() / ("man-" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  auto written = WriteManPages(t.app, dir, "muster 0.1.0");
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(*written, 3);
  EXPECT_TRUE(std::filesystem::exists(dir + "/muster.1"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/muster-get.1"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/muster-task-internal.1"));
  std::filesystem::remove_all(dir);
  auto missing = WriteManPages(t.app, dir + "/nope", "muster 0.1.0");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(dir + "/nope/muster.1"), std::string::npos);
}

// What bash completes for the words typed (the last one being completed),
// by the generated script run in a real bash.
std::string Complete(const std::string& script, const std::vector<std::string>& words) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("completion-" + std::to_string(::getpid()))).string();
  std::string array;
  for (const std::string& w : words) array += "'" + w + "' ";
  std::ofstream(path) << script << "\nCOMP_WORDS=(" << array << ")\nCOMP_CWORD=" << words.size() - 1
                      << "\n_muster\necho \"${COMPREPLY[*]}\"\n";
  std::unique_ptr<FILE, int (*)(FILE*)> p(::popen(("bash " + path).c_str(), "r"), ::pclose);
  std::string out;
  char buf[256];
  while (p && std::fgets(buf, sizeof buf, p.get()) != nullptr) out += buf;
  p.reset();
  std::filesystem::remove(path);
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

TEST(BashCompletion, CompletesCommandsAtEachLevelAndTheFlagsOfTheCommandTyped) {
  Tree t;
  const std::string script = BashCompletion(t.app);
  EXPECT_EQ(Complete(script, {"muster", "su"}), "submit");
  EXPECT_EQ(Complete(script, {"muster", "get", "j"}), "jobs");
  EXPECT_EQ(Complete(script, {"muster", "get", ""}), "jobs nodes");
  EXPECT_EQ(Complete(script, {"muster", "submit", "--g"}), "--gpus");
  EXPECT_EQ(Complete(script, {"muster", "get", "jobs", "--o"}), "--output");
  EXPECT_EQ(Complete(script, {"muster", "submit", "--wait", "--q"}), "--queue");
  EXPECT_EQ(Complete(script, {"muster", "ta"}), "") << "a hidden command is not offered";
}

}  // namespace
}  // namespace muster::cli
