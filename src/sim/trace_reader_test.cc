#include "sim/trace_reader.h"

#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace muster::sim {
namespace {

constexpr char kHeader[] = "job_id,submit_time,num_gpus,duration,user,tenant,priority,status,gpu_milli,censored\n";

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

StatusOr<std::vector<TraceJob>> Read(const std::string& text) {
  std::istringstream in(text);
  return ReadTrace(in, "src");
}

// Expects an InvalidArgument error whose message contains every needle.
void ExpectError(const std::string& text, const std::vector<std::string>& needles) {
  StatusOr<std::vector<TraceJob>> r = Read(text);
  ASSERT_FALSE(r.ok()) << "accepted:\n" << text;
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  for (const std::string& n : needles) {
    EXPECT_TRUE(Contains(r.status().message(), n)) << "\"" << n << "\" not in: " << r.status().message();
  }
}

TEST(ReadTraceTest, ReadsNormalizedFile) {
  const std::string text = std::string(kHeader) +
                           "j1,0,8,3600,alice,vision,2,COMPLETED,8000,0\n"
                           "j2,15,1,120,bob,nlp,0,FAILED,500,1\n";
  StatusOr<std::vector<TraceJob>> r = Read(text);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  const TraceJob& a = (*r)[0];
  EXPECT_EQ(a.id, "j1");
  EXPECT_EQ(a.submit_s, 0);
  EXPECT_EQ(a.num_gpus, 8);
  EXPECT_EQ(a.duration_s, 3600);
  EXPECT_EQ(a.user, "alice");
  EXPECT_EQ(a.tenant, "vision");
  EXPECT_EQ(a.priority, 2);
  EXPECT_EQ(a.status, "COMPLETED");
  EXPECT_EQ(a.gpu_milli, 8000);
  EXPECT_FALSE(a.censored);
  const TraceJob& b = (*r)[1];
  EXPECT_EQ(b.id, "j2");
  EXPECT_EQ(b.submit_s, 15);
  EXPECT_EQ(b.num_gpus, 1);
  EXPECT_EQ(b.duration_s, 120);
  EXPECT_EQ(b.user, "bob");
  EXPECT_EQ(b.tenant, "nlp");
  EXPECT_EQ(b.priority, 0);
  EXPECT_EQ(b.status, "FAILED");
  EXPECT_EQ(b.gpu_milli, 500);
  EXPECT_TRUE(b.censored);
}

TEST(ReadTraceTest, HeaderOnlyGivesNoJobs) {
  StatusOr<std::vector<TraceJob>> r = Read(kHeader);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->empty());
}

TEST(ReadTraceTest, ColumnsInAnotherOrder) {
  const std::string text =
      "censored,duration,user,num_gpus,job_id,gpu_milli,status,priority,tenant,submit_time\n"
      "1,600,carol,4,x7,4000,RUNNING,3,speech,42\n";
  StatusOr<std::vector<TraceJob>> r = Read(text);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);
  const TraceJob& j = (*r)[0];
  EXPECT_EQ(j.id, "x7");
  EXPECT_EQ(j.submit_s, 42);
  EXPECT_EQ(j.num_gpus, 4);
  EXPECT_EQ(j.duration_s, 600);
  EXPECT_EQ(j.user, "carol");
  EXPECT_EQ(j.tenant, "speech");
  EXPECT_EQ(j.priority, 3);
  EXPECT_EQ(j.status, "RUNNING");
  EXPECT_EQ(j.gpu_milli, 4000);
  EXPECT_TRUE(j.censored);
}

TEST(ReadTraceTest, OnlyRequiredColumnsUseDefaults) {
  StatusOr<std::vector<TraceJob>> r = Read(
      "job_id,submit_time,num_gpus,duration,extra\n"
      "a,5,2,100,ignored\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);
  const TraceJob& j = (*r)[0];
  EXPECT_EQ(j.num_gpus, 2);
  EXPECT_EQ(j.gpu_milli, 2000);  // whole GPUs when gpu_milli is absent
  EXPECT_EQ(j.priority, 0);
  EXPECT_EQ(j.user, "");
  EXPECT_FALSE(j.censored);
}

TEST(ReadTraceTest, MissingRequiredColumn) {
  for (const std::string missing : {"job_id", "submit_time", "num_gpus", "duration"}) {
    SCOPED_TRACE(missing);
    std::string header;
    for (const std::string c : {"job_id", "submit_time", "num_gpus", "duration", "user"}) {
      if (c == missing) continue;
      header += (header.empty() ? "" : ",") + c;
    }
    ExpectError(header + "\n", {"src:1", "\"" + missing + "\""});
  }
}

TEST(ReadTraceTest, BadIntegerNamesLineAndColumn) {
  const std::string text = std::string(kHeader) +
                           "j1,0,8,3600,alice,vision,2,COMPLETED,8000,0\n"
                           "j2,10,eight,3600,alice,vision,2,COMPLETED,8000,0\n";
  ExpectError(text, {"src:3", "num_gpus", "\"eight\""});
}

// Found by sim_input_fuzz: with a column named twice, rows were checked
// against the number of distinct names, and a short row was read past its
// end (a crash under ASan, garbage without).
TEST(ReadTraceTest, AColumnNamedTwiceIsAnError) {
  ExpectError("job_id,submit_time,num_gpus,duration,job_id,user\nj1,0,8,3600\n",
              {"src:1", "column \"job_id\" appears twice"});
}

// Found by sim_input_fuzz: a submit time of 5.8e18 s overflowed the
// simulator's milliseconds (UBSan); numbers are bounded.
TEST(ReadTraceTest, NumbersBeyondAnyRealTraceAreErrors) {
  ExpectError(std::string(kHeader) + "j1,5800000000000000083,8,3600,a,v,2,C,8000,0\n",
              {"src:2", "submit_time: must be from 0 to 100000000000"});
  ExpectError(std::string(kHeader) + "j1,0,9223372036854775807,3600,a,v,2,C,,0\n", {"src:2", "num_gpus"});
  ExpectError(std::string(kHeader) + "j1,0,8,100000000001,a,v,2,C,8000,0\n", {"src:2", "duration"});
  ExpectError(std::string(kHeader) + "j1,0,8,3600,a,v,2,C,-5,0\n", {"src:2", "gpu_milli"});
}

// Found by sim_input_fuzz: the bad value was echoed raw.
TEST(ReadTraceTest, ABadValueIsEchoedEscaped) {
  const std::string text = std::string(kHeader) + "j1,1\x01 1291,8,3600,alice,vision,2,COMPLETED,8000,0\n";
  ExpectError(text, {"src:2", "submit_time", "\"1\\u0001 1291\""});
}

TEST(ReadTraceTest, BlankLinesStillCountForLineNumbers) {
  const std::string text = std::string(kHeader) + "\n" + "j2,x,1,60,u,t,0,S,1000,0\n";
  ExpectError(text, {"src:3", "submit_time"});
}

TEST(ReadTraceTest, EmptyFile) { ExpectError("", {"src", "empty"}); }

TEST(ReadTraceTest, UnknownDurationAccepted) {
  StatusOr<std::vector<TraceJob>> r = Read(std::string(kHeader) + "j1,0,1,-1,u,t,0,RUNNING,1000,1\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].duration_s, -1);
}

TEST(ReadTraceTest, EmptyDurationIsUnknown) {
  StatusOr<std::vector<TraceJob>> r = Read(std::string(kHeader) + "j1,0,1,,u,t,0,RUNNING,1000,1\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].duration_s, -1);
}

TEST(ReadTraceTest, DurationBelowMinusOneRejected) {
  ExpectError(std::string(kHeader) + "j1,0,1,-2,u,t,0,S,1000,0\n", {"src:2", "duration"});
}

TEST(ReadTraceTest, IntegralFloatAccepted) {
  StatusOr<std::vector<TraceJob>> r = Read(std::string(kHeader) + "j1,0.0,2,3600.0,u,t,0,COMPLETED,2000.00,0\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].duration_s, 3600);
  EXPECT_EQ((*r)[0].submit_s, 0);
  EXPECT_EQ((*r)[0].gpu_milli, 2000);
}

TEST(ReadTraceTest, FractionalValueRejected) {
  ExpectError(std::string(kHeader) + "j1,0,2,3600.5,u,t,0,COMPLETED,2000,0\n", {"src:2", "duration", "\"3600.5\""});
}

TEST(ReadTraceTest, NegativeValuesRejected) {
  ExpectError(std::string(kHeader) + "j1,-5,2,60,u,t,0,S,2000,0\n", {"src:2", "submit_time"});
  ExpectError(std::string(kHeader) + "j1,5,-2,60,u,t,0,S,2000,0\n", {"src:2", "num_gpus"});
}

TEST(ReadTraceTest, EmptyJobIdRejected) {
  ExpectError(std::string(kHeader) + ",5,2,60,u,t,0,S,2000,0\n", {"src:2", "job_id"});
}

TEST(ReadTraceTest, TooFewColumnsRejected) { ExpectError(std::string(kHeader) + "j1,5,2,60\n", {"src:2", "columns"}); }

TEST(ReadTraceTest, CrlfLineEndings) {
  StatusOr<std::vector<TraceJob>> r = Read(
      "job_id,submit_time,num_gpus,duration,censored\r\n"
      "a,1,2,3,1\r\n"
      "b,4,5,6,0\r\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_TRUE((*r)[0].censored);
  EXPECT_EQ((*r)[1].duration_s, 6);
  EXPECT_FALSE((*r)[1].censored);
}

TEST(ReadTraceTest, MissingFileIsNotFound) {
  StatusOr<std::vector<TraceJob>> r = ReadTraceFile("/nonexistent/muster/trace.csv");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace muster::sim
