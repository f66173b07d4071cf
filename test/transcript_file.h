// Transcript files: small text files of commands and the output each must
// produce, read by people in review (etcd's raft/testdata style). Used by
// the scheduler's (test/transcripts/scheduler) and the lifecycle's
// (test/transcripts/lifecycle) transcript tests.
//
// Format: blocks of one command line, a line "----", the expected output and
// a blank line; lines starting with '#' before a command are comments.
// With MUSTER_REWRITE=1 in the environment, CheckTranscript rewrites the
// expected parts from the actual output (then review the diff).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace muster::testing {

struct TranscriptBlock {
  std::vector<std::string> comments;
  std::string command;
  std::string expected;
};

inline std::vector<TranscriptBlock> ParseTranscript(const std::string& text) {
  std::vector<TranscriptBlock> blocks;
  std::istringstream in(text);
  std::string line;
  TranscriptBlock cur;
  enum { kCommand, kExpected } mode = kCommand;
  while (std::getline(in, line)) {
    if (mode == kCommand) {
      if (line.empty()) continue;
      if (line[0] == '#') {
        cur.comments.push_back(line);
      } else if (line == "----") {
        mode = kExpected;
      } else {
        cur.command = line;
      }
    } else if (line.empty()) {
      blocks.push_back(std::move(cur));
      cur = TranscriptBlock{};
      mode = kCommand;
    } else {
      cur.expected += line + "\n";
    }
  }
  if (mode == kExpected || !cur.command.empty()) blocks.push_back(std::move(cur));
  return blocks;
}

// A command line split into its verb, its positional words and its
// key=value words ("submit 1 gpus=8 hold" -> submit, {1, hold}, {gpus: 8}).
struct TranscriptCommand {
  std::string verb;
  std::vector<std::string> positional;
  std::map<std::string, std::string> kv;
};
inline TranscriptCommand SplitCommand(const std::string& line) {
  TranscriptCommand c;
  std::istringstream in(line);
  in >> c.verb;
  std::string tok;
  while (in >> tok) {
    const size_t eq = tok.find('=');
    if (eq == std::string::npos) {
      c.positional.push_back(tok);
    } else {
      c.kv[tok.substr(0, eq)] = tok.substr(eq + 1);
    }
  }
  return c;
}

// The .txt files of `dir`, sorted.
inline std::vector<std::string> TranscriptFiles(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".txt") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// A test name from a transcript's path ("node-lost.txt" -> "node_lost").
inline std::string TranscriptName(const std::string& path) {
  std::string n = std::filesystem::path(path).stem().string();
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

// Runs every command of the file at `path` through `run` in order and
// expects each block's output (or rewrites them, see above).
inline void CheckTranscript(const std::string& path, const std::function<std::string(const std::string&)>& run) {
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  std::vector<TranscriptBlock> blocks = ParseTranscript(ss.str());
  ASSERT_FALSE(blocks.empty()) << path << " has no commands";
  const bool rewrite = std::getenv("MUSTER_REWRITE") != nullptr;
  std::string rewritten;
  for (TranscriptBlock& b : blocks) {
    const std::string actual = run(b.command);
    if (rewrite) {
      for (const auto& c : b.comments) rewritten += c + "\n";
      rewritten += b.command + "\n----\n" + actual + "\n";
    } else {
      EXPECT_EQ(actual, b.expected) << path << ": command `" << b.command << "`";
    }
  }
  if (rewrite) std::ofstream(path) << rewritten;
}

}  // namespace muster::testing
