#include "cli/job_summary_reader.h"

#include <charconv>
#include <cstring>
#include <optional>

namespace muster::cli {
namespace {

constexpr int kMaxDepth = 256;

// A strict JSON reader over one text, written for this one shape: it reads
// the page's items into their fields and skips every other value (checking
// it all the same). Strings are scanned a run at a time, not a character
// at a time through a general parser's input layer, which was most of the
// time `muster get jobs` took for a long list.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()) {}

  const std::string& error() const { return error_; }

  bool Fail(const char* what) {
    if (error_.empty()) error_ = std::string(what) + " at byte " + std::to_string(p_ - begin_);
    return false;
  }
  // The next character that is not white space (0 at the end).
  char Next() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
    return p_ < end_ ? *p_ : '\0';
  }
  bool Eat(char c) {
    if (Next() != c) return false;
    ++p_;
    return true;
  }
  bool Expect(char c, const char* what) { return Eat(c) || Fail(what); }
  bool AtEnd() { return Next() == '\0' && p_ == end_; }

  // A string, decoded into `out` (skipped when null).
  bool String(std::string* out) {
    if (!Expect('"', "expected a string")) return false;
    if (out) out->clear();
    while (true) {
      const char* run = p_;
      while (p_ < end_ && *p_ != '"' && *p_ != '\\' && static_cast<unsigned char>(*p_) >= 0x20) ++p_;
      if (out) out->append(run, static_cast<size_t>(p_ - run));
      if (p_ == end_) return Fail("unterminated string");
      const char c = *p_++;
      if (c == '"') return true;
      if (c != '\\') {
        --p_;
        return Fail("control character in a string");
      }
      if (p_ == end_) return Fail("unterminated string");
      const char e = *p_++;
      char plain = 0;
      switch (e) {
        case '"':
          plain = '"';
          break;
        case '\\':
          plain = '\\';
          break;
        case '/':
          plain = '/';
          break;
        case 'b':
          plain = '\b';
          break;
        case 'f':
          plain = '\f';
          break;
        case 'n':
          plain = '\n';
          break;
        case 'r':
          plain = '\r';
          break;
        case 't':
          plain = '\t';
          break;
        case 'u': {
          uint32_t cp = 0;
          if (!Hex4(cp)) return false;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return Fail("lone low surrogate");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t low = 0;
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return Fail("lone high surrogate");
            p_ += 2;
            if (!Hex4(low)) return false;
            if (low < 0xDC00 || low > 0xDFFF) return Fail("lone high surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          if (out) AppendUtf8(cp, *out);
          continue;
        }
        default:
          return Fail("bad escape in a string");
      }
      if (out) out->push_back(plain);
    }
  }

  // A number; `value` is set when it is an integer that fits 64 bits (one
  // above INT64_MAX wraps, as the JSON library's unsigned numbers did).
  bool Number(std::optional<int64_t>& value) {
    Next();
    const char* start = p_;
    if (p_ < end_ && *p_ == '-') ++p_;
    if (p_ == end_ || !IsDigit(*p_)) return Fail("bad number");
    if (*p_ == '0') {
      ++p_;
    } else {
      while (p_ < end_ && IsDigit(*p_)) ++p_;
    }
    bool integer = true;
    if (p_ < end_ && *p_ == '.') {
      integer = false;
      ++p_;
      if (p_ == end_ || !IsDigit(*p_)) return Fail("bad number");
      while (p_ < end_ && IsDigit(*p_)) ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      integer = false;
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end_ || !IsDigit(*p_)) return Fail("bad number");
      while (p_ < end_ && IsDigit(*p_)) ++p_;
    }
    value.reset();
    if (!integer) return true;
    int64_t v;
    if (std::from_chars(start, p_, v).ec == std::errc()) {
      value = v;
    } else if (uint64_t u; *start != '-' && std::from_chars(start, p_, u).ec == std::errc()) {
      value = static_cast<int64_t>(u);
    }
    return true;
  }

  // Any value, checked and skipped.
  bool Skip(int depth) {
    if (depth > kMaxDepth) return Fail("nested too deeply");
    switch (Next()) {
      case '"':
        return String(nullptr);
      case '{':
        return Object([&](const std::string&) { return Skip(depth + 1); });
      case '[':
        return Array([&] { return Skip(depth + 1); });
      case 't':
        return Literal("true");
      case 'f':
        return Literal("false");
      case 'n':
        return Literal("null");
      default: {
        std::optional<int64_t> ignored;
        return Number(ignored);
      }
    }
  }

  // An object; `member(key)` reads each member's value.
  template <typename Member>
  bool Object(Member&& member) {
    if (!Expect('{', "expected an object")) return false;
    if (Eat('}')) return true;
    std::string key;
    while (true) {
      if (!String(&key) || !Expect(':', "expected ':'") || !member(key)) return false;
      if (Eat(',')) continue;
      return Expect('}', "expected ',' or '}'");
    }
  }

  // An array; `element()` reads each element.
  template <typename Element>
  bool Array(Element&& element) {
    if (!Expect('[', "expected an array")) return false;
    if (Eat(']')) return true;
    while (true) {
      if (!element()) return false;
      if (Eat(',')) continue;
      return Expect(']', "expected ',' or ']'");
    }
  }

 private:
  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }

  bool Literal(const char* word) {
    const size_t n = std::strlen(word);
    if (static_cast<size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0) return Fail("unexpected character");
    p_ += n;
    return true;
  }

  bool Hex4(uint32_t& cp) {
    if (end_ - p_ < 4) return Fail("bad \\u escape");
    cp = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = *p_++;
      const int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
      if (d < 0) return Fail("bad \\u escape");
      cp = cp * 16 + static_cast<uint32_t>(d);
    }
    return true;
  }

  static void AppendUtf8(uint32_t cp, std::string& out) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  std::string error_;
};

// The text field a key names, or null.
std::string* TextField(JobSummaryItem& j, const std::string& key) {
  if (key == "name") return &j.name;
  if (key == "user") return &j.user;
  if (key == "queue") return &j.queue;
  if (key == "priority") return &j.priority;
  if (key == "state") return &j.state;
  if (key == "reason") return &j.reason;
  if (key == "submitTime") return &j.submit_time;
  return nullptr;
}

bool IsNumberStart(char c) { return c == '-' || (c >= '0' && c <= '9'); }

}  // namespace

StatusOr<int64_t> ReadJobSummaryPage(std::string_view text, int64_t max_items,
                                     const std::function<void(const JobSummaryItem&)>& each) {
  Scanner s(text);
  int64_t count = 0;
  bool stopped = false;  // the limit was reached: the rest is not read
  // A field of the expected type is read; any other value is skipped, as
  // are the fields a table does not show.
  const auto item_member = [&](JobSummaryItem& j, const std::string& key) -> bool {
    const char c = s.Next();
    if (c == '"') return s.String(TextField(j, key));
    if (IsNumberStart(c)) {
      std::optional<int64_t> v;
      if (!s.Number(v)) return false;
      if (v && key == "id") j.id = std::to_string(*v);
      if (v && key == "gpus") j.gpus = *v;
      if (v && key == "replicas") j.replicas = *v;
      return true;
    }
    if (c == '[' && key == "nodes") {
      return s.Array([&] {
        if (s.Next() != '"') return s.Skip(4);
        j.nodes.emplace_back();
        return s.String(&j.nodes.back());
      });
    }
    return s.Skip(3);
  };
  const auto item = [&]() -> bool {
    if (s.Next() != '{') return s.Skip(2);
    JobSummaryItem j;
    if (!s.Object([&](const std::string& key) { return item_member(j, key); })) return false;
    if (count == max_items) {
      stopped = true;
      return false;
    }
    each(j);
    ++count;
    return true;
  };
  const bool ok = s.Object([&](const std::string& key) {
    if (key == "items" && s.Next() == '[') return s.Array(item);
    return s.Skip(1);
  });
  if (stopped) return count;
  if (!ok || !s.AtEnd()) {
    if (ok) s.Fail("text after the page");
    return Status(StatusCode::kInternal, "the server's job list is not JSON: " + s.error());
  }
  return count;
}

}  // namespace muster::cli
