#include "common/status.h"

#include <memory>
#include <string>

#include <gtest/gtest.h>

namespace muster {
namespace {

TEST(StatusTest, DefaultIsOk) {
  const Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.field(), "");
  EXPECT_TRUE(Status::Ok().ok());
  EXPECT_EQ(Status::Ok().ToString(), "OK");
}

TEST(StatusTest, CarriesCodeMessageAndField) {
  const Status s = InvalidArgument("must be >= 1, got 0", "replicas");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "must be >= 1, got 0");
  EXPECT_EQ(s.field(), "replicas");
}

TEST(StatusTest, HelpersSetTheirCodes) {
  EXPECT_EQ(NotFound("x").code(), StatusCode::kNotFound);
  EXPECT_EQ(FailedPrecondition("x").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(Internal("x").code(), StatusCode::kInternal);
  EXPECT_EQ(DataLoss("x").code(), StatusCode::kDataLoss);
  EXPECT_EQ(InvalidArgument("x").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(InvalidArgument("x").field(), "");
  EXPECT_EQ(NotFound("gone").message(), "gone");
}

TEST(StatusTest, ToStringUsesFieldWhenPresent) {
  EXPECT_EQ(InvalidArgument("must be >= 1, got 0", "replicas").ToString(), "replicas: must be >= 1, got 0");
}

TEST(StatusTest, ToStringUsesCodeNameWithoutField) {
  EXPECT_EQ(NotFound("job 7").ToString(), "NOT_FOUND: job 7");
  EXPECT_EQ(InvalidArgument("bad").ToString(), "INVALID_ARGUMENT: bad");
  EXPECT_EQ(Status(StatusCode::kUnavailable, "store down").ToString(), "UNAVAILABLE: store down");
}

TEST(StatusTest, StatusCodeNames) {
  EXPECT_STREQ(StatusCodeName(StatusCode::kOk), "OK");
  EXPECT_STREQ(StatusCodeName(StatusCode::kInvalidArgument), "INVALID_ARGUMENT");
  EXPECT_STREQ(StatusCodeName(StatusCode::kNotFound), "NOT_FOUND");
  EXPECT_STREQ(StatusCodeName(StatusCode::kAlreadyExists), "ALREADY_EXISTS");
  EXPECT_STREQ(StatusCodeName(StatusCode::kFailedPrecondition), "FAILED_PRECONDITION");
  EXPECT_STREQ(StatusCodeName(StatusCode::kOutOfRange), "OUT_OF_RANGE");
  EXPECT_STREQ(StatusCodeName(StatusCode::kUnavailable), "UNAVAILABLE");
  EXPECT_STREQ(StatusCodeName(StatusCode::kInternal), "INTERNAL");
  EXPECT_STREQ(StatusCodeName(StatusCode::kDataLoss), "DATA_LOSS");
}

TEST(StatusTest, WithFieldPrefixJoinsWithDot) {
  const Status s = InvalidArgument("must be >= 0", "gpus").WithFieldPrefix("spec");
  EXPECT_EQ(s.field(), "spec.gpus");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "must be >= 0");
  EXPECT_EQ(s.ToString(), "spec.gpus: must be >= 0");
}

TEST(StatusTest, WithFieldPrefixNests) {
  const Status s = InvalidArgument("bad", "gpus").WithFieldPrefix("resources").WithFieldPrefix("spec");
  EXPECT_EQ(s.field(), "spec.resources.gpus");
}

TEST(StatusTest, WithFieldPrefixOnEmptyFieldUsesPrefix) {
  const Status s = NotFound("missing").WithFieldPrefix("cluster.nodes");
  EXPECT_EQ(s.field(), "cluster.nodes");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "missing");
}

TEST(StatusTest, WithFieldPrefixKeepsOkUnchanged) {
  const Status s = Status::Ok().WithFieldPrefix("spec");
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.field(), "");
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusOrTest, HoldsValue) {
  StatusOr<int> v = 42;
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v.value(), 42);
  EXPECT_EQ(*v, 42);
  EXPECT_TRUE(v.status().ok());
  *v = 7;
  EXPECT_EQ(v.value(), 7);
}

TEST(StatusOrTest, HoldsError) {
  StatusOr<int> v = NotFound("job 3");
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(v.status().message(), "job 3");
}

TEST(StatusOrTest, ArrowAccessesMembers) {
  StatusOr<std::string> v = std::string("abc");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->size(), 3u);
  const StatusOr<std::string>& cv = v;
  EXPECT_EQ(cv->front(), 'a');
}

TEST(StatusOrTest, MoveOnlyValue) {
  StatusOr<std::unique_ptr<int>> v = std::make_unique<int>(5);
  ASSERT_TRUE(v.ok());
  std::unique_ptr<int> p = std::move(v).value();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 5);
}

// Helpers for the macro tests. `reached` records whether control got past the
// macro.
Status FailIf(bool fail) { return fail ? FailedPrecondition("failed") : Status::Ok(); }

Status UseReturnIfError(bool fail, bool& reached) {
  RETURN_IF_ERROR(FailIf(fail));
  reached = true;
  return Internal("after");
}

TEST(StatusMacroTest, ReturnIfErrorReturnsTheError) {
  bool reached = false;
  const Status s = UseReturnIfError(true, reached);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "failed");
  EXPECT_FALSE(reached);
}

TEST(StatusMacroTest, ReturnIfErrorContinuesOnOk) {
  bool reached = false;
  const Status s = UseReturnIfError(false, reached);
  EXPECT_TRUE(reached);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message(), "after");
}

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgument("odd: " + std::to_string(x), "x");
  return x / 2;
}

StatusOr<int> Quarter(int x, bool& reached) {
  ASSIGN_OR_RETURN(int h, Half(x));
  ASSIGN_OR_RETURN(int q, Half(h));
  reached = true;
  return q;
}

TEST(StatusMacroTest, AssignOrReturnAssignsValues) {
  bool reached = false;
  StatusOr<int> q = Quarter(20, reached);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(*q, 5);
  EXPECT_TRUE(reached);
}

TEST(StatusMacroTest, AssignOrReturnPropagatesFirstError) {
  bool reached = false;
  StatusOr<int> q = Quarter(7, reached);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(q.status().message(), "odd: 7");
  EXPECT_EQ(q.status().field(), "x");
  EXPECT_FALSE(reached);
}

TEST(StatusMacroTest, AssignOrReturnPropagatesSecondError) {
  bool reached = false;
  StatusOr<int> q = Quarter(6, reached);  // 6 -> 3 -> odd
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().message(), "odd: 3");
  EXPECT_FALSE(reached);
}

Status AssignToExisting(int x, int& out) {
  ASSIGN_OR_RETURN(out, Half(x));
  return Status::Ok();
}

TEST(StatusMacroTest, AssignOrReturnToExistingVariable) {
  int out = -1;
  EXPECT_TRUE(AssignToExisting(8, out).ok());
  EXPECT_EQ(out, 4);
  out = -1;
  EXPECT_EQ(AssignToExisting(9, out).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(out, -1);
}

StatusOr<std::unique_ptr<int>> MakeBox(bool fail) {
  if (fail) return DataLoss("no box");
  return std::make_unique<int>(11);
}

StatusOr<int> Unbox(bool fail) {
  ASSIGN_OR_RETURN(std::unique_ptr<int> box, MakeBox(fail));
  return *box;
}

TEST(StatusMacroTest, AssignOrReturnMovesMoveOnlyValues) {
  StatusOr<int> v = Unbox(false);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 11);
  EXPECT_EQ(Unbox(true).status().code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace muster
