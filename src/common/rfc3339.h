// RFC 3339 timestamps: "2026-11-26T10:00:00Z" <-> Time (UTC), as the API
// writes them and cloud metadata endpoints give them.
//
// Parsing is strict: exactly YYYY-MM-DDTHH:MM:SS, an optional fraction of 1
// to 9 digits (kept to the millisecond, the rest dropped), and a final 'Z'
// or a numeric offset ("+02:00", "-05:30": the time is local, UTC plus the
// offset). The date must exist (2026-02-29 does not), hours 00..23, minutes
// and seconds 00..59 (no leap second), and the instant in UTC must fall
// between 1970-01-01 and 9999-12-31. Lower-case 't'/'z', "+0200" and
// spaces are refused. Times are always written in UTC.
//
//   ParseRfc3339Utc("2026-11-26T10:00:00Z")       -> Time of 1795687200000 ms
//   ParseRfc3339Utc("2026-11-26T10:00:00.25Z")    -> ... 1795687200250 ms
//   ParseRfc3339Utc("2026-11-26T11:00:00+01:00")  -> ... 1795687200000 ms
//   FormatRfc3339Utc(t)  -> "2026-11-26T10:00:00Z", or with ".250" when the
//                           time has milliseconds; parses back to t.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/time.h"

namespace muster {

// The time, or nullopt when `text` is not a valid RFC 3339 timestamp as above.
std::optional<Time> ParseRfc3339Utc(std::string_view text);

// Precondition: t is between 1970-01-01 and 9999-12-31 (what Parse returns).
std::string FormatRfc3339Utc(Time t);

}  // namespace muster
