// The comparer of tonnx/compare.h.
#include "tonnx/compare.h"

#include <ATen/ATen.h>

#include <sstream>

namespace tonnx {
namespace {

std::string fmt(double v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

Comparison mismatch(std::string why) {
  Comparison c;
  c.ok = false;
  c.mismatch = std::move(why);
  return c;
}

}  // namespace

Comparison compare(const at::Tensor& got_in, const at::Tensor& exp_in, Tolerance tol) {
  if (!got_in.defined()) return mismatch("got an undefined tensor, expected " + exp_in.toString());
  if (got_in.scalar_type() != exp_in.scalar_type())
    return mismatch(std::string("dtype: got ") + c10::toString(got_in.scalar_type()) +
                    ", expected " + c10::toString(exp_in.scalar_type()));
  if (got_in.sizes() != exp_in.sizes())
    return mismatch("shape: got " + c10::str(got_in.sizes()) + ", expected " +
                    c10::str(exp_in.sizes()));
  Comparison c;
  if (got_in.numel() == 0) return c;
  at::Tensor got = got_in.contiguous().reshape({-1}), exp = exp_in.contiguous().reshape({-1});
  at::ScalarType st = got.scalar_type();
  if (at::isComplexType(st)) {
    got = at::view_as_real(got).reshape({-1});
    exp = at::view_as_real(exp).reshape({-1});
    st = got.scalar_type();
  }
  bool floating = at::isFloatingType(st);
  at::Tensor g = got.to(at::kDouble), e = exp.to(at::kDouble);
  at::Tensor same = g == e;
  if (floating) same = same | (at::isnan(g) & at::isnan(e));
  at::Tensor diff = at::where(same, at::zeros_like(g), at::abs(g - e));
  c.max_abs = diff.max().item<double>();
  c.max_rel = (diff / at::abs(e).clamp_min(1e-12)).max().item<double>();
  // Integers are exact unless atol allows whole steps (quantized values: --atol 1).
  at::Tensor bad =
      floating ? ~((diff <= tol.atol + tol.rtol * at::abs(e)) | same) : diff > tol.atol;
  if (!bad.any().item<bool>()) return c;
  c.ok = false;
  int64_t i = bad.nonzero()[0][0].item<int64_t>();
  // The first bad element's index in the (complex: per component) expected shape.
  std::vector<int64_t> idx;
  int64_t rem = at::isComplexType(got_in.scalar_type()) ? i / 2 : i;
  for (int64_t d = got_in.dim() - 1; d >= 0; --d) {
    idx.insert(idx.begin(), rem % got_in.size(d));
    rem /= got_in.size(d);
  }
  std::ostringstream os;
  os << c10::str(at::IntArrayRef(idx)) << ": got ";
  if (floating)
    os << fmt(got[i].item<double>()) << ", expected " << fmt(exp[i].item<double>());
  else
    os << got[i].item<int64_t>() << ", expected " << exp[i].item<int64_t>();
  os << " (" << bad.sum().item<int64_t>() << " of " << got.numel() << " differ)";
  c.mismatch = os.str();
  return c;
}

Comparison compare(const backend::RunValue& got, const backend::RunValue& expected, Tolerance tol) {
  using Kind = backend::RunValue::Kind;
  if (got.kind() != expected.kind() && !(expected.is_none() && got.empty()))
    return mismatch("got " + got.describe() + ", expected " + expected.describe());
  switch (expected.kind()) {
    case Kind::None:
      return {};
    case Kind::Tensor:
      return compare(got.tensor(), expected.tensor(), tol);
    case Kind::Strings: {
      const backend::StringTensor &g = got.strings(), &e = expected.strings();
      if (g.shape != e.shape)
        return mismatch("shape: got " + c10::str(at::IntArrayRef(g.shape)) + ", expected " +
                        c10::str(at::IntArrayRef(e.shape)));
      for (size_t i = 0; i < e.data.size(); ++i)
        if (g.data[i] != e.data[i])
          return mismatch("[" + std::to_string(i) + "]: got \"" + g.data[i] + "\", expected \"" +
                          e.data[i] + "\"");
      return {};
    }
    case Kind::Sequence: {
      const backend::Sequence &g = got.sequence(), &e = expected.sequence();
      if (g.items.size() != e.items.size())
        return mismatch("sequence length: got " + std::to_string(g.items.size()) + ", expected " +
                        std::to_string(e.items.size()));
      Comparison all;
      for (size_t i = 0; i < e.items.size(); ++i) {
        Comparison c = compare(g.items[i], e.items[i], tol);
        if (!c.ok) return mismatch("item " + std::to_string(i) + ": " + c.mismatch);
        all.max_abs = std::max(all.max_abs, c.max_abs);
        all.max_rel = std::max(all.max_rel, c.max_rel);
      }
      return all;
    }
  }
  return {};
}

}  // namespace tonnx
