#include "api/json_writer.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace muster::api {

void AppendJsonString(std::string_view s, std::string& out) {
  const bool plain = std::all_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x80 && c != '"' && c != '\\';
  });
  if (!plain) {
    // Escapes, multi-byte characters and bytes that are not UTF-8: the JSON
    // library's own writer, so the two never disagree.
    out += JsonText(nlohmann::json(std::string(s)));
    return;
  }
  out += '"';
  out += s;
  out += '"';
}

std::string JsonText(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void JsonWriter::Separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (depth_ == 0) return;
  const uint64_t bit = uint64_t{1} << ((depth_ - 1) & 63);
  if (has_member_ & bit) out_ += ',';
  has_member_ |= bit;
}

JsonWriter& JsonWriter::Open(char c) {
  Separate();
  out_ += c;
  ++depth_;
  has_member_ &= ~(uint64_t{1} << ((depth_ - 1) & 63));
  return *this;
}

JsonWriter& JsonWriter::Close(char c) {
  out_ += c;
  --depth_;
  return *this;
}

JsonWriter& JsonWriter::Key(std::string_view key) {
  Separate();
  AppendJsonString(key, out_);
  out_ += ':';
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view s) {
  Separate();
  AppendJsonString(s, out_);
  return *this;
}

JsonWriter& JsonWriter::Int(int64_t v) {
  Separate();
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::Bool(bool v) {
  Separate();
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::Null() {
  Separate();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::Raw(std::string_view json) {
  Separate();
  out_ += json;
  return *this;
}

}  // namespace muster::api
