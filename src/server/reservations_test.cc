#include "server/reservations.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/rfc3339.h"

namespace muster::server {
namespace {

using nlohmann::json;

const Time kNow = *ParseRfc3339Utc("2026-12-01T08:00:00Z");

StatusOr<ReservationEntry> Read(const std::string& text) {
  return ReservationFromJson(json::parse(text), kNow, {"gpu3", "gpu1", "gpu2"});
}

std::string Error(const std::string& text) {
  auto r = Read(text);
  return r.ok() ? "accepted" : r.status().field() + ": " + r.status().message();
}

TEST(Reservations, ABodyIsReadWithItsDefaultsAndRoundTrips) {
  auto r = Read(R"({"name":"maint","nodes":["gpu1","gpu2"],"duration":"12h","users":["ann"]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->window.start, kNow) << "now, unless told";
  EXPECT_EQ(r->window.end, kNow + Duration::Hours(12));
  Reservations all;
  ASSERT_TRUE(all.Add(*r).ok());
  Reservations loaded;
  ASSERT_TRUE(loaded.Load(all.Dump()).ok());
  ASSERT_EQ(loaded.all().size(), 1u);
  EXPECT_EQ(loaded.all()[0].window, r->window);
  EXPECT_EQ(loaded.all()[0].users, r->users);
  EXPECT_FALSE(loaded.Load("{broken").ok());
}

TEST(Reservations, WhatCannotBeReservedIsRefusedNamingTheField) {
  EXPECT_EQ(Error(R"({"name":"a b","nodes":["gpu1"],"duration":"1h","users":["ann"]})"),
            "name: must be a name of 1 to 128 characters of [A-Za-z0-9._-]");
  EXPECT_EQ(Error(R"({"name":"r","nodes":["cpu1"],"duration":"1h","users":["ann"]})"),
            "nodes[0]: no node \"cpu1\" in the cluster");
  EXPECT_EQ(Error(R"({"name":"r","nodes":["gpu1","gpu1"],"duration":"1h","users":["ann"]})"),
            "nodes[1]: is named twice");
  EXPECT_EQ(Error(R"({"name":"r","nodes":[],"duration":"1h","users":["ann"]})"), "nodes: must name at least one");
  EXPECT_EQ(Error(R"({"name":"r","nodes":["gpu1"],"users":["ann"]})"), "end: give end or duration, one of them");
  EXPECT_EQ(Error(R"({"name":"r","nodes":["gpu1"],"duration":"1h","end":"now","users":["ann"]})"),
            "duration: give end or duration, one of them");
  EXPECT_EQ(Error(R"({"name":"r","nodes":["gpu1"],"start":"tomorrow","duration":"1h","users":["ann"]})"),
            "start: must be an RFC 3339 time such as \"2026-12-01T08:00:00Z\", or \"now\", got \"tomorrow\"");
  EXPECT_EQ(
      Error(
          R"({"name":"r","nodes":["gpu1"],"start":"2026-12-01T00:00:00Z","end":"2026-12-01T07:00:00Z","users":["ann"]})"),
      "end: has passed already");
  EXPECT_EQ(Error(R"({"name":"r","nodes":["gpu1"],"duration":"400d","users":["ann"]})"),
            "duration: a reservation lasts at most 365 days");
  EXPECT_EQ(Error(R"({"name":"r","nodes":["gpu1"],"duration":"1h"})"), "users: name the users or queues it is for");
  EXPECT_EQ(Error(R"({"name":"r","nodes":["gpu1"],"duration":"1h","queues":["re search"]})"),
            "queues[0]: must be a name of 1 to 128 characters of [A-Za-z0-9._-], got \"re search\"");
  EXPECT_EQ(Error(R"({"name":"r","nodes":["gpu1"],"duration":"1h","users":["ann"],"partition":"p"})"),
            "partition: unknown field");
}

TEST(Reservations, OverlapsOnANodeAreRefusedAndUseIsForItsUsersOrQueues) {
  Reservations all;
  ASSERT_TRUE(all.Add(*Read(R"({"name":"a","nodes":["gpu1","gpu2"],"duration":"2h","users":["ann"]})")).ok());
  const Status taken = all.Add(*Read(R"({"name":"a","nodes":["gpu3"],"duration":"1h","users":["ann"]})"));
  EXPECT_EQ(taken.code(), StatusCode::kFailedPrecondition);
  const Status overlap =
      all.Add(*Read(R"({"name":"b","nodes":["gpu2"],"start":"2026-12-01T09:00:00Z","duration":"2h","queues":["q"]})"));
  EXPECT_EQ(overlap.field(), "nodes");
  EXPECT_NE(overlap.message().find("node gpu2 is in reservation a"), std::string::npos) << overlap.ToString();
  EXPECT_TRUE(
      all.Add(*Read(R"({"name":"b","nodes":["gpu2"],"start":"2026-12-01T10:00:00Z","duration":"2h","queues":["q"]})"))
          .ok())
      << "after a's window";
  EXPECT_TRUE(all.MayUse("a", "ann", "default").ok());
  EXPECT_TRUE(all.MayUse("b", "bob", "q").ok());
  EXPECT_EQ(all.MayUse("a", "bob", "default").message(),
            "reservation a is for users ann and queues none; not for bob in queue default");
  EXPECT_EQ(all.MayUse("c", "ann", "q").message(), "no reservation \"c\" (known: a, b)");
  EXPECT_EQ(all.RemoveEnded(kNow + Duration::Hours(3)), std::vector<std::string>{"a"});
  EXPECT_EQ(all.Windows().size(), 1u);
  EXPECT_TRUE(all.Remove("b"));
  EXPECT_FALSE(all.Remove("b"));
}

// scontrol create reservation ... Nodes=ALL Flags=MAINT,IGNORE_JOBS: a
// maintenance window over every node, though another reservation holds
// some of them.
TEST(Reservations, FlagsAndAllNodes) {
  Reservations all;
  ASSERT_TRUE(all.Add(*Read(R"({"name":"a","nodes":["gpu1"],"duration":"2h","users":["ann"]})")).ok());
  auto maint = Read(R"({"name":"m","nodes":"ALL","duration":"1h","users":["root"],"flags":["maint","IGNORE_JOBS"]})");
  ASSERT_TRUE(maint.ok()) << maint.status().ToString();
  EXPECT_EQ(maint->window.nodes, (std::vector<std::string>{"gpu1", "gpu2", "gpu3"}));
  EXPECT_EQ(maint->flags, (std::vector<std::string>{"MAINT", "IGNORE_JOBS"}));
  EXPECT_TRUE(maint->all_nodes);
  EXPECT_TRUE(maint->Has("IGNORE_JOBS"));
  EXPECT_FALSE(maint->Has("OVERLAP"));
  EXPECT_TRUE(all.Add(*maint).ok()) << "MAINT may overlap";
  EXPECT_TRUE(
      all.Add(*Read(R"({"name":"o","nodes":["gpu1"],"duration":"1h","users":["bob"],"flags":["OVERLAP"]})")).ok());
  EXPECT_FALSE(all.Add(*Read(R"({"name":"p","nodes":["gpu2"],"duration":"1h","users":["bob"]})")).ok())
      << "without a flag, no overlap";
  Reservations loaded;
  ASSERT_TRUE(loaded.Load(all.Dump()).ok());
  ASSERT_NE(loaded.Find("m"), nullptr);
  EXPECT_EQ(loaded.Find("m")->flags, maint->flags);
  EXPECT_TRUE(loaded.Find("m")->all_nodes);
  EXPECT_EQ(
      Read(R"({"name":"r","nodes":["gpu1"],"duration":"1h","users":["a"],"flags":["ignore_jobs","overlap"]})")->flags,
      (std::vector<std::string>{"OVERLAP", "IGNORE_JOBS"}))
      << "in Slurm's order";
  EXPECT_EQ(Error(R"({"name":"r","nodes":["gpu1"],"duration":"1h","users":["ann"],"flags":["DAILY"]})"),
            "flags[0]: must be IGNORE_JOBS, MAINT or OVERLAP, got \"DAILY\"");
  EXPECT_EQ(Error(R"({"name":"r","nodes":["gpu1"],"duration":"1h","users":["ann"],"flags":"MAINT"})"),
            "flags: must be a list of IGNORE_JOBS, MAINT or OVERLAP");
  EXPECT_EQ(ReservationFromJson(json::parse(R"({"name":"r","nodes":"ALL","duration":"1h","users":["ann"]})"), kNow, {})
                .status()
                .message(),
            "ALL: the cluster has no nodes yet");
}

}  // namespace
}  // namespace muster::server
