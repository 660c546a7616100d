// The one argument parser of the tonnx command: each command is a Command (its help, the
// options it takes and the function that runs it), main.cpp parses its arguments with
// parse_args, and values are read through Args' typed getters, which fail with one error
// style: "--threads 'x' is not an integer", "--opset 8 is out of range: use 9 to 23".
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
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
  // The value of -o or --output, whichever is given.
  std::optional<std::string> output() const { return get("-o") ? get("-o") : get("--output"); }
  // The option as an integer in lo..hi, or nullopt when not given. `expect` says what is
  // allowed, for the error: "use 9 to 23".
  std::optional<int64_t> integer(const std::string& k, int64_t lo, int64_t hi,
                                 const std::string& expect) const;
  std::optional<int64_t> integer(const std::string& k) const {
    return integer(k, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), "");
  }
  // The option as a finite number in lo..hi (above lo where lo_open), or nullopt.
  std::optional<double> number(const std::string& k, double lo, double hi, bool lo_open,
                               const std::string& expect) const;
};

// A command of `tonnx`: its name, the text `tonnx NAME --help` prints, the options it takes,
// and the function that runs it on the parsed arguments (returning the exit code; errors are
// thrown: UsageError -> 2, others -> 1).
struct Command {
  const char* name;
  const char* help;
  Spec spec;
  int (*run)(const Args& a);
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

inline double parse_number(const std::string& s, const std::string& what) {
  try {
    size_t pos = 0;
    double v = std::stod(s, &pos);
    if (pos != s.size() || !std::isfinite(v)) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    throw UsageError(what + " '" + s + "' is not a number");
  }
}

inline std::optional<int64_t> Args::integer(const std::string& k, int64_t lo, int64_t hi,
                                            const std::string& expect) const {
  auto v = get(k);
  if (!v) return std::nullopt;
  int64_t n = parse_int(*v, k);
  if (n < lo || n > hi) throw UsageError(k + " " + *v + " is out of range: " + expect);
  return n;
}

inline std::optional<double> Args::number(const std::string& k, double lo, double hi, bool lo_open,
                                          const std::string& expect) const {
  auto v = get(k);
  if (!v) return std::nullopt;
  double d = parse_number(*v, k);
  if (d < lo || (lo_open && d == lo) || d > hi)
    throw UsageError(k + " " + *v + " is out of range: " + expect);
  return d;
}

}  // namespace tonnx::cli
