// The option reader against what the real sbatch 22.05 did, recorded by
// test/slurm/record_sbatch_options.sh and record_slurm_reading.sh: every
// proper prefix of every option resolves as sbatch resolves it, and every
// probe directive sbatch refused for how it is written is refused here.
#include "cli/sbatch_options.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

namespace muster::cli {
namespace {

// Rows of a tab-separated file with a header line, as column -> value.
std::vector<std::map<std::string, std::string>> Tsv(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path << " (run from the repository root)";
  std::vector<std::map<std::string, std::string>> rows;
  std::vector<std::string> header;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, '\t');) cells.push_back(c);
    if (header.empty()) {
      header = cells;
      continue;
    }
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size() && i < cells.size(); ++i) row[header[i]] = cells[i];
    rows.push_back(row);
  }
  return rows;
}

TEST(SbatchOptions, EveryPrefixResolvesAsTheRealSbatchResolvesIt) {
  const auto options = Tsv("test/slurm/sbatch_options.tsv");
  ASSERT_EQ(options.size(), 106u);
  for (const auto& row : options) {
    auto o = ResolveSbatchOption(row.at("option"), /*with_pyxis=*/false);
    ASSERT_TRUE(o.ok()) << row.at("option");
    const std::string arg = row.at("argument");
    EXPECT_EQ((*o)->argument, arg == "none"       ? SbatchArgument::kNone
                              : arg == "optional" ? SbatchArgument::kOptional
                                                  : SbatchArgument::kRequired)
        << row.at("option");
  }
  const auto prefixes = Tsv("test/slurm/sbatch_prefixes.tsv");
  ASSERT_EQ(prefixes.size(), 554u);
  for (const auto& row : prefixes) {
    auto o = ResolveSbatchOption(row.at("prefix"), /*with_pyxis=*/false);
    const std::string want = row.at("sbatch reads");
    if (want == "ambiguous") {
      EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument) << "--" << row.at("prefix");
    } else {
      ASSERT_TRUE(o.ok()) << "--" << row.at("prefix") << ": " << o.status().ToString();
      EXPECT_EQ((*o)->name, want) << "--" << row.at("prefix");
    }
  }
  EXPECT_EQ(ResolveSbatchOption("frobnicate", false).status().code(), StatusCode::kNotFound);
}

// srun's table (recorded the same way): every long option and every proper
// prefix reads as the real srun 22.05 read it.
TEST(SrunOptions, EveryPrefixResolvesAsTheRealSrunResolvesIt) {
  const auto options = Tsv("test/slurm/srun_options.tsv");
  ASSERT_EQ(options.size(), 129u);
  auto first_option = [](const std::string& word) -> StatusOr<std::string> {
    size_t rest = 0;
    ASSIGN_OR_RETURN(std::vector<SbatchOption> read, ReadSrunOptions({word, "x", "command"}, &rest));
    if (read.empty()) return NotFound(word);
    return read.front().name;
  };
  for (const auto& row : options) {
    auto o = first_option("--" + row.at("option"));
    ASSERT_TRUE(o.ok()) << row.at("option") << ": " << o.status().message();
    EXPECT_EQ(*o, row.at("option"));
    const std::string arg = row.at("argument");
    auto bare = ReadSrunOptions({"--" + row.at("option")}, nullptr);
    if (arg == "required") {
      EXPECT_FALSE(bare.ok()) << row.at("option") << " needs a value";
    } else {
      EXPECT_TRUE(bare.ok()) << row.at("option");
      EXPECT_EQ(ReadSrunOptions({"--" + row.at("option") + "=1"}, nullptr).ok(), arg == "optional") << row.at("option");
    }
  }
  const auto prefixes = Tsv("test/slurm/srun_prefixes.tsv");
  ASSERT_EQ(prefixes.size(), 679u);
  for (const auto& row : prefixes) {
    // pyxis's --container-image and --container-mounts (which the recorded
    // srun had not) make "--conta" and the like ambiguous here.
    const std::string& prefix = row.at("prefix");
    if (prefix != "container" && std::string("container-image").rfind(prefix, 0) == 0) continue;
    auto o = first_option("--" + row.at("prefix"));
    if (row.at("srun reads") == "ambiguous") {
      EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument) << "--" << row.at("prefix");
    } else {
      ASSERT_TRUE(o.ok()) << "--" << row.at("prefix") << ": " << o.status().ToString();
      EXPECT_EQ(*o, row.at("srun reads")) << "--" << row.at("prefix");
    }
  }
}

// The words of a probe's directive line, split as sbatch splits them (the
// probes use only plain words, double quotes and a trailing comment).
std::vector<std::string> ProbeWords(const std::string& directive) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false, quoted = false;
  for (char ch : directive.substr(std::string("#SBATCH").size())) {
    if (quoted) {
      if (ch == '"')
        quoted = false;
      else
        word += ch;
    } else if (ch == '"') {
      quoted = in_word = true;
    } else if (ch == ' ' || ch == '\t') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else if (ch == '#') {
      break;
    } else {
      word += ch;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

TEST(SbatchOptions, ProbesSbatchRefusedForTheirSpellingAreRefused) {
  const auto probes = Tsv("test/slurm/option_probes.tsv");
  ASSERT_GE(probes.size(), 70u);
  int refused_by_spelling = 0;
  for (const auto& row : probes) {
    const std::string& verdict = row.at("verdict");
    auto read = ReadSbatchOptions(ProbeWords(row.at("directive")));
    // sbatch's own spelling errors: getopt's, and a stray word.
    const bool spelling = verdict.find("ambiguous") != std::string::npos ||
                          verdict.find("unrecognized option") != std::string::npos ||
                          verdict.find("Invalid directive") != std::string::npos;
    if (spelling) {
      ++refused_by_spelling;
      EXPECT_FALSE(read.ok()) << row.at("directive");
    } else {
      // Accepted, or refused for what a value means (read here, judged later).
      EXPECT_TRUE(read.ok()) << row.at("directive") << ": " << read.status().ToString();
    }
  }
  EXPECT_EQ(refused_by_spelling, 5);
}

TEST(SbatchOptions, ArgumentsAsGetoptTakesThem) {
  auto r = ReadSbatchOptions({"-N2", "-n", "8", "--out", "o.txt", "--exclusive", "-HO", "--exclusive=user"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 7u);
  EXPECT_EQ((*r)[0].name, "nodes");
  EXPECT_EQ((*r)[0].value, "2");
  EXPECT_EQ((*r)[1].name, "ntasks");
  EXPECT_EQ((*r)[1].value, "8");
  EXPECT_EQ((*r)[2].name, "output");
  EXPECT_EQ((*r)[2].given, "--out");
  EXPECT_EQ((*r)[3].name, "exclusive");
  EXPECT_FALSE((*r)[3].value.has_value());
  EXPECT_EQ((*r)[4].name, "hold");
  EXPECT_EQ((*r)[5].name, "overcommit");
  EXPECT_EQ((*r)[6].value, "user");
  EXPECT_FALSE(ReadSbatchOptions({"--exclusive", "user"}).ok());  // an optional argument only with "="
  EXPECT_FALSE(ReadSbatchOptions({"--nodes"}).ok());
  EXPECT_FALSE(ReadSbatchOptions({"--hold=yes"}).ok());
  EXPECT_FALSE(ReadSbatchOptions({"-X"}).ok());
  auto pyxis = ReadSbatchOptions({"--container-image=nvcr.io/nvidia/pytorch:24.05-py3"});
  ASSERT_TRUE(pyxis.ok()) << pyxis.status().ToString();
  EXPECT_EQ((*pyxis)[0].name, "container-image");
}

}  // namespace
}  // namespace muster::cli
