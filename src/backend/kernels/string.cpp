// String tensors (StringTensor in tonnx/backend.h): StringNormalizer, TfIdfVectorizer, Equal
// on strings (for elementwise.cpp's Equal), and Cast and CastLike of every value, numbers
// and strings.
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>

#include "backend/kernels/kernel.h"

namespace tonnx::backend {
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

TONNX_KERNEL("StringNormalizer", 10, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  std::string action = n.attr_s("case_change_action", "NONE");
  bool sensitive = n.attr_i("is_case_sensitive", 0) != 0;
  std::vector<std::string> stop;
  if (const ir::AttrValue* a = n.attr("stopwords")) stop = a->strings();
  std::set<std::string> stopset;
  for (const auto& w : stop) stopset.insert(sensitive ? w : lower(w));
  return [&n, action, sensitive, stopset](const RunValues& in) -> RunValues {
    const StringTensor& x = in.at(0).strings();
    if (x.shape.size() > 2 || (x.shape.size() == 2 && x.shape[0] != 1))
      kernel_fail(n, "input must have shape [C] or [1, C]");
    StringTensor y;
    for (const auto& w : x.data) {
      if (stopset.count(sensitive ? w : lower(w))) continue;
      y.data.push_back(action == "LOWER" ? lower(w) : action == "UPPER" ? upper(w) : w);
    }
    // All filtered out: a single empty string.
    if (y.data.empty()) y.data.push_back("");
    int64_t c = static_cast<int64_t>(y.data.size());
    y.shape = x.shape.size() == 2 ? std::vector<int64_t>{1, c} : std::vector<int64_t>{c};
    return {y};
  };
});

// TfIdfVectorizer over int or string n-grams; pool_* hold the n-grams of each length in
// order of ngram_counts; ngram_indexes map them to output columns.
TONNX_KERNEL("TfIdfVectorizer", 9, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  int64_t min_n = n.attr_i("min_gram_length", 1), max_n = n.attr_i("max_gram_length", 1);
  int64_t max_skip = n.attr_i("max_skip_count", 0);
  std::string mode = n.attr_s("mode", "TF");
  std::vector<int64_t> counts = n.attr_ints("ngram_counts"), indexes = n.attr_ints("ngram_indexes");
  std::vector<float> weights = n.attr_floats("weights");
  std::vector<std::string> pool;
  if (const ir::AttrValue* a = n.attr("pool_strings")) {
    pool = a->strings();
  } else {
    for (int64_t v : n.attr_ints("pool_int64s")) pool.push_back(std::to_string(v));
  }
  // Every index and count is checked before it is used (a hostile model could point
  // anywhere): counts are ascending offsets into the pool, indexes columns of a sane output.
  if (min_n < 1 || max_n < min_n)
    kernel_fail(n, "min_gram_length " + std::to_string(min_n) + " and max_gram_length " +
                       std::to_string(max_n) + " must satisfy 1 <= min <= max");
  if (max_skip < 0) kernel_fail(n, "max_skip_count must be >= 0, got " + std::to_string(max_skip));
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    kernel_fail(n, "mode must be TF, IDF or TFIDF, got '" + mode + "'");
  for (size_t c = 0; c < counts.size(); ++c)
    if (counts[c] < 0 || counts[c] > static_cast<int64_t>(pool.size()) ||
        (c > 0 && counts[c] < counts[c - 1]))
      kernel_fail(n, "ngram_counts[" + std::to_string(c) + "] = " + std::to_string(counts[c]) +
                         " is not an ascending offset into the pool of " +
                         std::to_string(pool.size()));
  constexpr int64_t kMaxColumns = int64_t{1} << 26;
  for (size_t i = 0; i < indexes.size(); ++i)
    if (indexes[i] < 0 || indexes[i] >= kMaxColumns)
      kernel_fail(n, "ngram_indexes[" + std::to_string(i) + "] = " + std::to_string(indexes[i]) +
                         " is not an output column (0 to " + std::to_string(kMaxColumns - 1) + ")");
  // n-gram (joined by \x1f) -> output column
  std::map<std::string, int64_t> column;
  int64_t out_size = 0;
  for (int64_t v : indexes) out_size = std::max(out_size, v + 1);
  size_t pos = 0, k = 0;
  for (size_t c = 0; c < counts.size(); ++c) {
    size_t len = c + 1;
    size_t end = c + 1 < counts.size() ? static_cast<size_t>(counts[c + 1]) : pool.size();
    for (pos = static_cast<size_t>(counts[c]); pos + len <= end; pos += len, ++k) {
      std::string key;
      for (size_t j = 0; j < len; ++j) key += (j ? "\x1f" : "") + pool[pos + j];
      if (k < indexes.size()) column[key] = indexes[k];
    }
  }
  return [&n, min_n, max_n, max_skip, mode, weights, column,
          out_size](const RunValues& in) -> RunValues {
    std::vector<std::vector<std::string>> rows;
    std::vector<int64_t> shape;
    if (in.at(0).is_strings()) {
      const StringTensor& x = in[0].strings();
      shape = x.shape;
      int64_t width = shape.empty() ? 1 : shape.back();
      for (size_t i = 0; i < x.data.size(); i += static_cast<size_t>(width))
        rows.emplace_back(x.data.begin() + i, x.data.begin() + i + width);
    } else {
      at::Tensor x = in[0].tensor().to(at::kLong).contiguous();
      shape = x.sizes().vec();
      int64_t width = x.dim() ? x.size(-1) : 1;
      auto* p = x.data_ptr<int64_t>();
      for (int64_t i = 0; i < x.numel(); i += width) {
        std::vector<std::string> r;
        for (int64_t j = 0; j < width; ++j) r.push_back(std::to_string(p[i + j]));
        rows.push_back(r);
      }
    }
    if (shape.size() > 2) kernel_fail(n, "input must be 1-D or 2-D");
    int64_t batch = shape.size() == 2 ? shape[0] : 1;
    if (rows.empty()) rows.resize(static_cast<size_t>(batch));
    at::Tensor y = at::zeros({batch, out_size}, at::kFloat);
    for (int64_t b = 0; b < batch; ++b) {
      const auto& r = rows[b];
      std::vector<double> tf(out_size, 0);
      // Longer n-grams or wider skips than the row cannot match: bounded by the row's length.
      const int64_t width = static_cast<int64_t>(r.size());
      for (int64_t len = min_n; len <= std::min(max_n, width); ++len) {
        int64_t skips = len == 1 ? 0 : std::min(max_skip, width);
        for (int64_t skip = 0; skip <= skips; ++skip) {
          int64_t span = (len - 1) * (skip + 1) + 1;
          for (int64_t st = 0; st + span <= static_cast<int64_t>(r.size()); ++st) {
            std::string key;
            for (int64_t j = 0; j < len; ++j) key += (j ? "\x1f" : "") + r[st + j * (skip + 1)];
            auto it = column.find(key);
            if (it != column.end()) tf[it->second] += 1;
          }
        }
      }
      for (int64_t c = 0; c < out_size; ++c) {
        double v = tf[c];
        if (mode == "IDF") v = v > 0 ? 1 : 0;
        if (mode != "TF") v *= c < static_cast<int64_t>(weights.size()) ? weights[c] : 1.0;
        y[b][c] = v;
      }
    }
    if (shape.size() < 2) y = y.reshape({out_size});
    return {y};
  };
});

// The shortest text that reads back as the same value, laid out as numpy prints floats:
// positional for 1e-4 <= |v| < 1e16, scientific otherwise; "nan", "inf", "-inf".
template <typename T>
std::string shortest(T v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  T a = std::abs(v);
  bool positional = a == 0 || (a >= T(1e-4) && a < T(1e16));
  auto r = std::to_chars(buf, buf + sizeof buf, v,
                         positional ? std::chars_format::fixed : std::chars_format::scientific);
  std::string out(buf, r.ptr);
  if (positional && out.find('.') == std::string::npos) out += ".0";
  return out;
}

// Cast and CastLike over any value: numeric casts as the tensor kernel does; strings parse
// as numbers (strtod: "NaN", "INF", "-INF" included); integers and bools print as numbers.
// Floats to strings depend on numpy's shortest-repr printing and are not supported.
RunValue cast_value(const ir::Node& n, const RunValue& v, ir::DType to) {
  if (v.is_strings()) {
    if (to == ir::DType::String) return v;
    const StringTensor& s = v.strings();
    at::Tensor d = at::empty({static_cast<int64_t>(s.data.size())}, at::kDouble);
    for (size_t i = 0; i < s.data.size(); ++i) {
      char* end = nullptr;
      d[static_cast<int64_t>(i)] = std::strtod(s.data[i].c_str(), &end);
      if (end == s.data[i].c_str())
        kernel_fail(n, "cannot parse \"" + s.data[i] + "\" as a number");
    }
    return d.reshape(s.shape).to(storage_type(to));
  }
  const at::Tensor& t = v.tensor();
  if (to == ir::DType::BFloat16 && t.scalar_type() == at::kFloat) {
    // Truncate to the upper 16 bits, as ONNX's reference (which made the test data) does.
    at::Tensor bits = at::bitwise_right_shift(t.contiguous().view(at::kInt), 16).to(at::kShort);
    return bits.view(at::kBFloat16);
  }
  if (to != ir::DType::String) return t.to(storage_type(to));
  StringTensor s;
  s.shape = t.sizes().vec();
  if (t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble) {
    at::Tensor c = t.contiguous().reshape({-1});
    for (int64_t i = 0; i < c.numel(); ++i)
      s.data.push_back(t.scalar_type() == at::kFloat ? shortest(c[i].item<float>())
                                                     : shortest(c[i].item<double>()));
    return s;
  }
  if (at::isFloatingType(t.scalar_type()))
    kernel_fail(n, "casting " + std::string(c10::toString(t.scalar_type())) +
                       " values to strings is not supported (float and double are)");
  at::Tensor c = t.to(at::kLong).contiguous().reshape({-1});
  for (int64_t i = 0; i < c.numel(); ++i) s.data.push_back(std::to_string(c[i].item<int64_t>()));
  return s;
}

TONNX_KERNEL("Cast", 1, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  auto to = static_cast<ir::DType>(n.attr_i("to", 0));
  return [&n, to](const RunValues& in) -> RunValues { return {cast_value(n, in.at(0), to)}; };
});

TONNX_KERNEL("CastLike", 15, kAnyOpset, [](const KernelSpec& s) -> Kernel {
  const ir::Node& n = s.node;
  return [&n](const RunValues& in) -> RunValues {
    const RunValue& like = in.at(1);
    ir::DType to = like.is_strings() ? ir::DType::String
                                     : ir::dtype_from_scalar_type(like.tensor().scalar_type());
    return {cast_value(n, in.at(0), to)};
  };
});

}  // namespace

// Equal of string tensors, elementwise (same shape, or B a single string): for Equal's kernel.
at::Tensor equal_strings(const ir::Node& n, const RunValue& a_in, const RunValue& b_in) {
  const StringTensor &a = a_in.strings(), &b = b_in.strings();
  bool scalar_b = b.data.size() == 1;
  if (!scalar_b && a.shape != b.shape)
    kernel_fail(n, "string inputs must have equal shapes (or B a single string)");
  at::Tensor y = at::empty({static_cast<int64_t>(a.data.size())}, at::kBool);
  for (size_t i = 0; i < a.data.size(); ++i)
    y[static_cast<int64_t>(i)] = a.data[i] == b.data[scalar_b ? 0 : i];
  return y.reshape(a.shape);
}

}  // namespace tonnx::backend
