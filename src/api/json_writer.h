// JSON text written directly into a string, for the hot paths (a submit's
// canonical spec, a job's API form, list pages), where building an
// nlohmann tree and dumping it cost more than the rest of the request.
//
// The output is byte for byte what nlohmann's dump(-1, ' ', false,
// error_handler_t::replace) writes for the same values in the same order:
// strings are escaped the same way and bytes that are not UTF-8 become
// U+FFFD. A stored spec's text is hashed for idempotency, so the two must
// not differ.
//
//   std::string out;
//   JsonWriter w(out);
//   w.BeginObject().Key("id").Int(7).Key("tags").BeginArray().String("a").EndArray().EndObject();
//   // out == R"({"id":7,"tags":["a"]})"
//
// The writer does not check the structure it is given (a key outside an
// object, unbalanced ends): callers are a few fixed functions with tests.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace muster::api {

// Appends `s` as a JSON string (quoted and escaped).
void AppendJsonString(std::string_view s, std::string& out);

// A tree's compact text, as the writer would write it: never throws (bytes
// that are not UTF-8 become U+FFFD).
std::string JsonText(const nlohmann::json& j);

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  JsonWriter& BeginObject() { return Open('{'); }
  JsonWriter& EndObject() { return Close('}'); }
  JsonWriter& BeginArray() { return Open('['); }
  JsonWriter& EndArray() { return Close(']'); }
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view s);
  JsonWriter& Int(int64_t v);
  JsonWriter& Bool(bool v);
  JsonWriter& Null();
  // JSON text that is already written: a value, or inside an object one or
  // more members ("a":1,"b":2) where a member goes.
  JsonWriter& Raw(std::string_view json);

 private:
  JsonWriter& Open(char c);
  JsonWriter& Close(char c);
  void Separate();

  std::string& out_;
  // One bit a nesting level (up to 64): whether that level has a member yet.
  uint64_t has_member_ = 0;
  int depth_ = 0;
  bool after_key_ = false;
};

}  // namespace muster::api
