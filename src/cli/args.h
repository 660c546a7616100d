// A small argument parser for the tonnx command: flags with values, switches, positionals.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace tonnx::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Spec {
  std::set<std::string> with_value;  // --opset N
  std::set<std::string> switches;    // --verbose
  std::set<std::string> repeatable;  // --input a=b (may appear many times)
  std::set<std::string> optional;    // --external-data or --external-data=NAME
};

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::vector<std::string>> values;
  std::set<std::string> flags;

  bool has(const std::string& k) const { return values.count(k) || flags.count(k); }
  std::optional<std::string> get(const std::string& k) const {
    auto it = values.find(k);
    if (it == values.end() || it->second.empty()) return std::nullopt;
    return it->second.back();
  }
  std::vector<std::string> all(const std::string& k) const {
    auto it = values.find(k);
    return it == values.end() ? std::vector<std::string>{} : it->second;
  }
};

// Whether a command's arguments ask for its help (--help or -h anywhere).
inline bool wants_help(const std::vector<std::string>& a) {
  return std::find(a.begin(), a.end(), "--help") != a.end() ||
         std::find(a.begin(), a.end(), "-h") != a.end();
}

inline Args parse_args(const std::vector<std::string>& argv, const Spec& spec) {
  Args a;
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string s = argv[i];
    if (s.rfind("--", 0) == 0 || (s.size() == 2 && s[0] == '-' && s[1] != '-')) {
      std::string key = s, val;
      bool inline_val = false;
      auto eq = s.find('=');
      if (eq != std::string::npos) {
        key = s.substr(0, eq);
        val = s.substr(eq + 1);
        inline_val = true;
      }
      if (spec.optional.count(key)) {
        if (a.has(key)) throw UsageError("option " + key + " is given twice");
        if (inline_val && val.empty()) throw UsageError("option " + key + "= has an empty value");
        if (inline_val)
          a.values[key].push_back(val);
        else
          a.flags.insert(key);
      } else if (spec.switches.count(key)) {
        if (inline_val) throw UsageError("option " + key + " takes no value");
        a.flags.insert(key);
      } else if (spec.with_value.count(key) || spec.repeatable.count(key)) {
        if (!inline_val) {
          if (i + 1 >= argv.size()) throw UsageError("option " + key + " needs a value");
          val = argv[++i];
        }
        if (a.values.count(key) && !spec.repeatable.count(key))
          throw UsageError("option " + key + " is given twice");
        a.values[key].push_back(val);
      } else {
        throw UsageError("unknown option '" + key + "'");
      }
    } else {
      a.positional.push_back(s);
    }
  }
  return a;
}

// "a,b,c" -> {a, b, c}; empty string -> {}.
inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  size_t start = 0;
  while (true) {
    size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p - start));
    if (p == std::string::npos) break;
    start = p + 1;
  }
  return out;
}

inline int64_t parse_int(const std::string& s, const std::string& what) {
  try {
    size_t pos = 0;
    long long v = std::stoll(s, &pos);
    if (pos != s.size()) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    throw UsageError(what + " '" + s + "' is not an integer");
  }
}

inline double parse_double(const std::string& s, const std::string& what) {
  try {
    size_t pos = 0;
    double v = std::stod(s, &pos);
    if (pos != s.size() || !(v >= 0)) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    throw UsageError(what + " '" + s + "' is not a number >= 0");
  }
}

}  // namespace tonnx::cli
