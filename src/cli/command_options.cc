#include "cli/command_options.h"

namespace muster::cli {

std::string CommandLine::Last(const std::string& name, const std::string& fallback) const {
  auto it = options.find(name);
  return it == options.end() || it->second.empty() ? fallback : it->second.back();
}

std::vector<std::string> CommandLine::List(const std::string& name) const {
  std::vector<std::string> out;
  auto it = options.find(name);
  if (it == options.end()) return out;
  for (const std::string& v : it->second) {
    size_t at = 0;
    for (;;) {
      const size_t comma = v.find(',', at);
      const std::string item = v.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
      if (!item.empty()) out.push_back(item);
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
  }
  return out;
}

StatusOr<CommandLine> ReadCommandLine(const std::vector<std::string>& args, std::span<const CommandOption> table) {
  CommandLine out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      out.words.insert(out.words.end(), args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (a.size() < 2 || a[0] != '-') {
      out.words.push_back(a);
      continue;
    }
    if (a[1] == '-') {
      const size_t eq = a.find('=');
      const std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      const CommandOption* found = nullptr;
      std::string candidates;
      int matches = 0;
      for (const CommandOption& o : table) {
        if (o.long_name == name) {
          found = &o;
          matches = 1;
          break;
        }
        if (!name.empty() && o.long_name.substr(0, name.size()) == name) {
          found = &o;
          ++matches;
          candidates += (candidates.empty() ? "--" : ", --") + std::string(o.long_name);
        }
      }
      if (matches == 0) return InvalidArgument("unrecognized option '--" + name + "'");
      if (matches > 1) return InvalidArgument("option '--" + name + "' is ambiguous; possibilities: " + candidates);
      std::string value;
      if (found->takes_value) {
        if (eq != std::string::npos) {
          value = a.substr(eq + 1);
        } else if (i + 1 < args.size()) {
          value = args[++i];
        } else {
          return InvalidArgument("option '--" + std::string(found->long_name) + "' requires an argument");
        }
      } else if (eq != std::string::npos) {
        return InvalidArgument("option '--" + std::string(found->long_name) + "' doesn't allow an argument");
      }
      out.options[std::string(found->long_name)].push_back(value);
      continue;
    }
    for (size_t k = 1; k < a.size(); ++k) {
      const CommandOption* found = nullptr;
      for (const CommandOption& o : table) {
        if (o.short_name == a[k]) found = &o;
      }
      if (found == nullptr) return InvalidArgument("invalid option -- '" + std::string(1, a[k]) + "'");
      if (!found->takes_value) {
        out.options[std::string(found->long_name)].push_back("");
        continue;
      }
      std::string value = a.substr(k + 1);
      if (value.empty()) {
        if (i + 1 >= args.size())
          return InvalidArgument("option requires an argument -- '" + std::string(1, a[k]) + "'");
        value = args[++i];
      }
      out.options[std::string(found->long_name)].push_back(value);
      break;
    }
  }
  return out;
}

}  // namespace muster::cli
