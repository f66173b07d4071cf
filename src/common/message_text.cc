#include "common/message_text.h"

#include <cstdio>

namespace muster {
namespace {

// Code points that must not appear raw in a message: C0, DEL, C1, the line
// and paragraph separators and the bidi controls ("Trojan Source").
bool NeedsEscape(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

std::string EscapeCodePoint(uint32_t cp) {
  switch (cp) {
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      break;
  }
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
  return buf;
}

// Escapes `text` into `out` until `max_bytes` of output; returns whether all
// of `text` fit. `quote` also escapes '"' and '\\' (for quoted echoes).
bool Escape(std::string_view text, size_t max_bytes, bool quote, std::string& out) {
  const size_t start = out.size();
  size_t i = 0;
  while (i < text.size()) {
    std::string piece;
    uint32_t cp = 0;
    size_t len = DecodeUtf8(text, i, &cp);
    if (len == 0) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(text[i]));
      piece = buf;
      len = 1;
    } else if (NeedsEscape(cp)) {
      piece = EscapeCodePoint(cp);
    } else if (quote && (cp == '"' || cp == '\\')) {
      piece = std::string("\\") + static_cast<char>(cp);
    } else {
      piece = std::string(text.substr(i, len));
    }
    if (out.size() - start + piece.size() > max_bytes) return false;
    out += piece;
    i += len;
  }
  return true;
}

bool IsIdentifier(std::string_view key) {
  if (key.empty() || key.size() > 64) return false;
  for (size_t i = 0; i < key.size(); ++i) {
    const char c = key[i];
    const bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

}  // namespace

size_t DecodeUtf8(std::string_view s, size_t i, uint32_t* cp) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  uint32_t c = b0 & (0xFF >> (len + 1));
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    c = (c << 6) | (byte(i + k) & 0x3F);
  }
  *cp = c;
  return len;
}

std::string SanitizeForMessage(std::string_view text, size_t max_bytes) {
  std::string out;
  if (!Escape(text, max_bytes, /*quote=*/false, out)) out += "...";
  return out;
}

std::string QuoteForMessage(std::string_view text, size_t max_bytes) {
  std::string out = "\"";
  const bool whole = Escape(text, max_bytes, /*quote=*/true, out);
  out += whole ? "\"" : "...\" (" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string ChildPath(const std::string& parent, std::string_view key) {
  if (IsIdentifier(key)) return parent + "." + std::string(key);
  return parent + "[" + QuoteForMessage(key) + "]";
}

}  // namespace muster
