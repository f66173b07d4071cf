// A label selector, as kubectl's -l: which jobs' spec labels a list keeps.
// Requirements are joined by commas, and all must hold:
//   key=value, key==value   the job has the label with that value
//   key!=value              it has not (no such label, or another value)
//   key                     it has the label, whatever its value
//   !key                    it has not the label
// Spaces around keys and values are ignored; a key is 1 to 256 characters
// without , = ! or spaces, a value at most 256 characters without , = !.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace muster::store {

struct LabelRequirement {
  enum class Op { kEqual, kNotEqual, kExists, kNotExists };
  std::string key;
  Op op = Op::kEqual;
  std::string value;  // kEqual, kNotEqual
  bool operator==(const LabelRequirement&) const = default;
};

// InvalidArgument naming `field` and the requirement at fault. At most 16
// requirements.
StatusOr<std::vector<LabelRequirement>> ParseLabelSelector(std::string_view text, const std::string& field);

}  // namespace muster::store
