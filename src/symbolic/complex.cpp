// Complex tensors and the FFT. ONNX has no complex arithmetic, so a complex tensor is exported as
// a real one with a trailing dim of 2 (real, imaginary), the layout ONNX's DFT reads and writes.
// The converter knows which values are complex (converter_complex.cpp) and sends every op that
// takes or makes one to a rule here; an op without a rule fails the export. The FFT ops are DFT
// (opset 17) with torch's normalizations; the inverse real FFT rebuilds the Hermitian half that
// torch.fft.rfft drops and keeps the real part of a complex inverse DFT.
#include "symbolic/complex.h"

#include <cmath>
#include <map>

#include "symbolic/helpers.h"

namespace tonnx::sym {
namespace {

// The real dtype of input i's (real, imaginary) pairs, or of a real input.
at::ScalarType real_type(SymbolicContext& g, size_t i) {
  auto t = g.type(i);
  if (!t || t->dtype == ir::DType::Undefined) return at::kFloat;
  at::ScalarType st = ir::scalar_type_from_dtype(t->dtype);
  return at::isFloatingType(st) ? st : at::kFloat;
}

Value* part(SymbolicContext& g, Value* pairs, int64_t k) {
  return g.op("Gather", {pairs, g.constant(at::scalar_tensor(k, at::kLong))},
              {{"axis", int64_t{-1}}});
}

Value* make_pair(SymbolicContext& g, Value* re, Value* im) {
  return g.op("Concat", {unsqueeze(g, re, {-1}), unsqueeze(g, im, {-1})}, {{"axis", int64_t{-1}}});
}

Value* result(SymbolicContext& g, Value* re, Value* im) {
  return g.complex_result(make_pair(g, re, im));
}

struct Cx {
  Value* re;
  Value* im;
};

// Input i as real and imaginary parts; a real input gets a zero imaginary part of its shape, as
// torch promotes it.
Cx operand(SymbolicContext& g, size_t i, at::ScalarType rt) {
  if (g.opset() < 11) g.unsupported_below(11, "complex tensors (negative axes of Gather)");
  if (g.is_complex(i)) {
    Value* p = g.cast(g.input(i), rt);  // a Python complex number is a ComplexDouble constant
    return {part(g, p, 0), part(g, p, 1)};
  }
  Value* r = input_as(g, i, rt);
  return {r, g.op("ConstantOfShape", {g.op("Shape", {r})}, {{"value", at::zeros({1}, rt)}})};
}

// The real dtype of a binary op's result, as torch promotes: the output's type where the trace
// has it; else a tensor's over a Python number's (a constant, ComplexDouble for 1j).
at::ScalarType pair_type(SymbolicContext& g, size_t a, size_t b) {
  if (auto t = g.output_type(0); t && t->dtype != ir::DType::Undefined) {
    at::ScalarType st = ir::scalar_type_from_dtype(t->dtype);
    if (at::isFloatingType(st)) return st;
  }
  if (g.is_constant(a) != g.is_constant(b)) return real_type(g, g.is_constant(a) ? b : a);
  return g.is_complex(a) || !g.is_complex(b) ? real_type(g, a) : real_type(g, b);
}

Outputs mul(SymbolicContext& g) {
  at::ScalarType rt = pair_type(g, 0, 1);
  Cx a = operand(g, 0, rt), b = operand(g, 1, rt);
  return result(g, g.op("Sub", {g.op("Mul", {a.re, b.re}), g.op("Mul", {a.im, b.im})}),
                g.op("Add", {g.op("Mul", {a.re, b.im}), g.op("Mul", {a.im, b.re})}));
}

Outputs div(SymbolicContext& g) {
  if (g.num_inputs() > 2 && !g.is_none(2)) g.fail("a rounding mode does not apply to complex");
  at::ScalarType rt = pair_type(g, 0, 1);
  Cx a = operand(g, 0, rt);
  if (!g.is_complex(1)) {  // by a real divisor: each part
    Value* d = input_as(g, 1, rt);
    return result(g, g.op("Div", {a.re, d}), g.op("Div", {a.im, d}));
  }
  Cx b = operand(g, 1, rt);
  Value* den = g.op("Add", {g.op("Mul", {b.re, b.re}), g.op("Mul", {b.im, b.im})});
  Value* re = g.op("Add", {g.op("Mul", {a.re, b.re}), g.op("Mul", {a.im, b.im})});
  Value* im = g.op("Sub", {g.op("Mul", {a.im, b.re}), g.op("Mul", {a.re, b.im})});
  return result(g, g.op("Div", {re, den}), g.op("Div", {im, den}));
}

// self + alpha * other (sub: minus), rsub: other - alpha * self.
Outputs add_sub(SymbolicContext& g, const std::string& op, bool reverse) {
  at::ScalarType rt = pair_type(g, 0, 1);
  Cx a = operand(g, reverse ? 1 : 0, rt), b = operand(g, reverse ? 0 : 1, rt);
  if (g.num_inputs() > 2 && !g.is_none(2)) {
    if (g.arg_type(2).find("complex") != std::string::npos) g.fail("a complex alpha");
    double alpha = g.f(2);
    if (alpha != 1.0) {
      Value* k = g.constant_scalar(alpha, rt);
      b = {g.op("Mul", {b.re, k}), g.op("Mul", {b.im, k})};
    }
  }
  return result(g, g.op(op, {a.re, b.re}), g.op(op, {a.im, b.im}));
}

Value* conj(SymbolicContext& g, Value* pairs, at::ScalarType rt) {
  return g.op("Mul", {pairs, g.constant(at::tensor({1.0, -1.0}, at::kDouble).to(rt))});
}

// atan2(y, x) from Atan: quadrant by the signs of x and y, signed zeros included (1/x < 0 for
// x = -0), as std::atan2.
Value* atan2(SymbolicContext& g, Value* y, Value* x, at::ScalarType rt) {
  Value* zero = g.constant_scalar(0, rt);
  Value* one = g.constant_scalar(1, rt);
  auto negative = [&](Value* v) {
    return g.op("Or", {g.op("Less", {v, zero}), g.op("Less", {g.op("Div", {one, v}), zero})});
  };
  Value* pi = g.constant_scalar(M_PI, rt);
  Value* x_neg = negative(x);
  Value* shift = g.op("Where", {x_neg, g.op("Where", {negative(y), g.op("Neg", {pi}), pi}), zero});
  Value* base = g.op("Add", {g.op("Atan", {g.op("Div", {y, x})}), shift});
  // Both zero: y/x is NaN; atan2 is +-0 for x = +0 and +-pi for x = -0.
  Value* both_zero = g.op("And", {g.op("Equal", {y, zero}), g.op("Equal", {x, zero})});
  return g.op("Where", {both_zero, g.op("Where", {x_neg, shift, y}), base});
}

Value* identity_result(SymbolicContext& g, size_t i) {
  Value* v = g.op("Identity", {g.input(i)});
  return g.is_complex(i) ? g.complex_result(v) : v;
}

// --- the FFT ---

// The logical rank of input i (a complex input's pairs have one dim more).
int64_t logical_rank(SymbolicContext& g, size_t i) { return g.rank(i) - (g.is_complex(i) ? 1 : 0); }

// The DFT axis of logical dim `dim` of input i: non-negative where the rank is known (in a branch
// the example inputs did not reach it may not be), else one further from the end, past the pair.
int64_t dft_axis(SymbolicContext& g, size_t i, int64_t dim) {
  auto t = g.type(i);
  if (t && t->shape) return norm_dim(g, dim, logical_rank(g, i));
  return dim < 0 ? dim - 1 : dim;
}

// The input as DFT takes it: pairs, or a real tensor with a trailing dim of 1.
Value* dft_input(SymbolicContext& g, size_t i) {
  if (g.opset() < 17) g.unsupported_below(17, "the FFT (ONNX's DFT)");
  if (g.is_complex(i)) return g.input(i);
  return unsqueeze(g, input_as(g, i, real_type(g, i)), {-1});
}

Value* dft(SymbolicContext& g, Value* x, int64_t axis, bool inverse, bool onesided,
           std::optional<int64_t> length) {
  std::vector<Value*> in{x};
  if (length) {
    if (*length < 1) g.fail("the FFT length must be positive, got " + std::to_string(*length));
    in.push_back(g.constant(at::scalar_tensor(*length, at::kLong)));
  }
  return g.op("DFT", in,
              {{"axis", axis}, {"inverse", int64_t{inverse}}, {"onesided", int64_t{onesided}}});
}

// torch's norm for a transform of n points: DFT is unscaled, its inverse scaled by 1/n
// ("backward"); "forward" and "ortho" move the scale.
Value* normalize(SymbolicContext& g, Value* y, const std::string& norm, bool inverse,
                 std::optional<int64_t> n, at::ScalarType rt) {
  if (norm == "backward") return y;
  if (norm != "forward" && norm != "ortho")
    g.fail("norm '" + norm + "' is not one of backward, forward, ortho");
  if (!n) g.fail("norm '" + norm + "' needs the transform's length, which the trace does not know");
  double k = norm == "ortho" ? std::sqrt(static_cast<double>(*n)) : static_cast<double>(*n);
  return g.op("Mul", {y, g.constant_scalar(inverse ? k : 1.0 / k, rt)});
}

std::string norm_arg(SymbolicContext& g, size_t i) { return g.is_none(i) ? "backward" : g.s(i); }

std::string swapped_norm(SymbolicContext& g, size_t i) {
  std::string n = norm_arg(g, i);
  return n == "backward" ? "forward" : n == "forward" ? "backward" : n;
}

struct Plan {
  std::vector<int64_t> dims;                  // logical, non-negative
  std::vector<std::optional<int64_t>> sizes;  // requested lengths (s), nullopt: as is
};

// dims and s of the n-dimensional transforms (torch.fft.fftn's rules: s alone takes the last
// len(s) dims, neither takes all dims; -1 in s keeps a dim's size).
Plan plan(SymbolicContext& g, size_t s_arg, size_t dim_arg, std::vector<int64_t> default_dims) {
  Plan p;
  std::optional<std::vector<int64_t>> s;
  if (!g.is_none(s_arg)) s = g.ints(s_arg);
  std::vector<int64_t> dims;
  if (!g.is_none(dim_arg)) {
    dims = g.ints(dim_arg);
  } else if (s) {
    for (size_t k = 0; k < s->size(); ++k)
      dims.push_back(static_cast<int64_t>(k) - static_cast<int64_t>(s->size()));
  } else if (!default_dims.empty()) {
    dims = default_dims;
  } else {
    for (int64_t d = 0; d < logical_rank(g, 0); ++d) dims.push_back(d);
  }
  if (s && s->size() != dims.size())
    g.fail("s has " + std::to_string(s->size()) + " sizes for " + std::to_string(dims.size()) +
           " dims");
  for (size_t k = 0; k < dims.size(); ++k) {
    p.dims.push_back(dft_axis(g, 0, dims[k]));
    p.sizes.push_back(s && (*s)[k] != -1 ? std::optional<int64_t>((*s)[k]) : std::nullopt);
  }
  return p;
}

// Complex-to-complex transforms of input 0 along the plan's dims.
Value* c2c(SymbolicContext& g, Value* x, const Plan& p, size_t first, size_t last, bool inverse,
           const std::string& norm, at::ScalarType rt) {
  for (size_t k = first; k < last; ++k) {
    x = dft(g, x, p.dims[k], inverse, false, p.sizes[k]);
    auto n = p.sizes[k] ? p.sizes[k] : known_size(g, 0, p.dims[k]);
    x = normalize(g, x, norm, inverse, n, rt);
  }
  return x;
}

Outputs fftn(SymbolicContext& g, bool inverse, const Plan& p, const std::string& norm) {
  at::ScalarType rt = real_type(g, 0);
  if (p.dims.empty()) {  // no transform: the input as a complex tensor
    Cx x = operand(g, 0, rt);
    return result(g, x.re, x.im);
  }
  return g.complex_result(c2c(g, dft_input(g, 0), p, 0, p.dims.size(), inverse, norm, rt));
}

Outputs rfftn(SymbolicContext& g, const Plan& p, const std::string& norm, bool conj_out = false) {
  if (g.is_complex(0)) g.fail("rfft takes a real input");
  if (p.dims.empty()) g.fail("rfftn needs at least one dim");
  at::ScalarType rt = real_type(g, 0);
  size_t last = p.dims.size() - 1;
  Value* x = dft(g, dft_input(g, 0), p.dims[last], false, true, p.sizes[last]);
  x = normalize(g, x, norm, false, p.sizes[last] ? p.sizes[last] : known_size(g, 0, p.dims[last]),
                rt);
  x = c2c(g, x, p, 0, last, false, norm, rt);
  return g.complex_result(conj_out ? conj(g, x, rt) : x);
}

// The real inverse along the plan's last dim: the full spectrum is the given half followed by
// the conjugates of its entries 1 .. n - n/2 - 1 in reverse order; the real part of its complex
// inverse DFT is the signal (the imaginary parts of DC and Nyquist drop out, as in torch).
Outputs irfftn(SymbolicContext& g, const Plan& p, const std::string& norm, bool conj_in = false) {
  at::ScalarType rt = real_type(g, 0);
  if (p.dims.empty()) g.fail("irfftn needs at least one dim");
  Value* x = g.input(0);
  if (!g.is_complex(0)) {  // a real input: a zero imaginary part
    Cx c = operand(g, 0, rt);
    x = make_pair(g, c.re, c.im);
  }
  if (conj_in) x = conj(g, x, rt);
  if (g.opset() < 17) g.unsupported_below(17, "the FFT (ONNX's DFT)");
  size_t last = p.dims.size() - 1;
  x = c2c(g, x, p, 0, last, true, norm, rt);
  int64_t axis = p.dims[last];
  std::optional<int64_t> m = known_size(g, 0, axis);
  std::optional<int64_t> n = p.sizes[last];
  if (!n && m) n = 2 * (*m - 1);
  if (n && *n < 1)
    g.fail("the inverse real FFT's output length must be positive, got " + std::to_string(*n));
  Value* half = x;
  Value* start = g.constant_ints({-2});  // n = 2 (m - 1): entries m - 2 down to 1
  if (p.sizes[last]) {
    int64_t keep = *n / 2 + 1;
    if (!m) {  // size unknown here: zeros of n / 2 + 1 appended, then the first n / 2 + 1 kept
      Value* shape = g.op("ScatterElements",
                          {g.op("Shape", {x}), g.constant_ints({axis}), g.constant_ints({keep})});
      Value* zeros = g.op("ConstantOfShape", {shape}, {{"value", at::zeros({1}, rt)}});
      half = g.op("Slice", {g.op("Concat", {x, zeros}, {{"axis", axis}}), g.constant_ints({0}),
                            g.constant_ints({keep}), g.constant_ints({axis})});
    } else if (*m >= keep) {
      half = g.op("Slice",
                  {x, g.constant_ints({0}), g.constant_ints({keep}), g.constant_ints({axis})});
    } else {  // zero-padded to n / 2 + 1
      std::vector<int64_t> pads(2 * static_cast<size_t>(logical_rank(g, 0) + 1), 0);
      pads[pads.size() / 2 + static_cast<size_t>(axis)] = keep - *m;
      half = g.op("Pad", {x, g.constant_ints(pads)});
    }
    start = g.constant_ints({*n - *n / 2 - 1});
  }
  Value* mirrored = g.op(
      "Slice", {half, start, g.constant_ints({0}), g.constant_ints({axis}), g.constant_ints({-1})});
  Value* full = g.op("Concat", {half, conj(g, mirrored, rt)}, {{"axis", axis}});
  Value* y = part(g, dft(g, full, axis, true, false, std::nullopt), 0);
  return normalize(g, y, norm, true, n, rt);
}

Plan plan1(SymbolicContext& g) {
  return {{dft_axis(g, 0, g.i(2))}, {g.is_none(1) ? std::nullopt : std::optional<int64_t>(g.i(1))}};
}

Outputs fft1(SymbolicContext& g, bool inverse) {
  return fftn(g, inverse, plan1(g), norm_arg(g, 3));
}

// fftshift / ifftshift: a roll by n / 2 (back: by n - n / 2) along each dim, as two slices.
Outputs shift(SymbolicContext& g, bool inverse) {
  int64_t rank = logical_rank(g, 0);
  std::vector<int64_t> dims;
  if (g.num_inputs() > 1 && !g.is_none(1)) {
    for (int64_t d : g.ints(1)) dims.push_back(norm_dim(g, d, rank));
  } else {
    for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  }
  Value* x = g.input(0);
  for (int64_t d : dims) {
    std::optional<int64_t> n = known_size(g, 0, d);
    if (!n) g.fail("needs the size of dim " + std::to_string(d) + " from the trace");
    int64_t cut = inverse ? *n / 2 : *n - *n / 2;
    Value* axis = g.constant_ints({d});
    Value* tail = g.op("Slice", {x, g.constant_ints({cut}), g.constant_ints({kInt64Max}), axis});
    Value* head = g.op("Slice", {x, g.constant_ints({0}), g.constant_ints({cut}), axis});
    x = g.op("Concat", {tail, head}, {{"axis", d}});
  }
  return g.is_complex(0) ? g.complex_result(x) : x;
}

Outputs real(SymbolicContext& g) {
  if (!g.is_complex(0)) return g.op("Identity", {g.input(0)});
  return part(g, g.input(0), 0);
}

Outputs imag(SymbolicContext& g) {
  if (!g.is_complex(0)) g.fail("imag is not defined for a real tensor");
  return part(g, g.input(0), 1);
}

Outputs conj_op(SymbolicContext& g) {
  if (!g.is_complex(0)) return g.op("Identity", {g.input(0)});
  return g.complex_result(conj(g, g.input(0), real_type(g, 0)));
}

Outputs angle(SymbolicContext& g) {
  if (g.is_complex(0)) {
    Value* p = g.input(0);
    return atan2(g, part(g, p, 1), part(g, p, 0), real_type(g, 0));
  }
  at::ScalarType rt = real_type(g, 0);
  Value* x = input_as(g, 0, rt);
  Value* zero = g.constant_scalar(0, rt);
  Value* sign = g.op("Where", {g.op("Less", {x, zero}), g.constant_scalar(M_PI, rt), zero});
  return g.op("Where", {g.op("IsNaN", {x}), x, sign});
}

Outputs view_as_complex(SymbolicContext& g) {
  return g.complex_result(g.op("Identity", {g.input(0)}));
}

Outputs view_as_real(SymbolicContext& g) {
  if (!g.is_complex(0)) g.fail("view_as_real takes a complex tensor");
  return g.op("Identity", {g.input(0)});
}

Outputs complex_of(SymbolicContext& g) {
  at::ScalarType rt = real_type(g, 0);
  Value* re = input_as(g, 0, rt);
  Value* im = input_as(g, 1, rt);
  Value* shape = g.op("Shape", {g.op("Add", {re, im})});  // the broadcast shape
  return result(g, g.op("Expand", {re, shape}), g.op("Expand", {im, shape}));
}

Outputs polar(SymbolicContext& g) {
  at::ScalarType rt = real_type(g, 0);
  Value* r = input_as(g, 0, rt);
  Value* theta = input_as(g, 1, rt);
  return result(g, g.op("Mul", {r, g.op("Cos", {theta})}), g.op("Mul", {r, g.op("Sin", {theta})}));
}

// fftfreq(n, d): [0, 1, ..., (n - 1) / 2, -(n / 2), ..., -1] / (d n); rfftfreq: [0, n / 2] / (d n).
// A constant when n is known at export; computed from a run-time n (a dynamic axis's size).
Outputs fftfreq(SymbolicContext& g, bool onesided) {
  at::ScalarType dt = g.is_none(2) ? at::kFloat : static_cast<at::ScalarType>(g.i(2));
  double d = g.f(1);
  if (g.is_constant(0)) {
    int64_t n = g.i(0);
    at::TensorOptions o = at::TensorOptions().dtype(dt);
    return g.constant(onesided ? at::fft_rfftfreq(n, d, o) : at::fft_fftfreq(n, d, o));
  }
  if (g.opset() < 11) g.unsupported_below(11, "fftfreq of a size known only at run time (Range)");
  auto scalar = [&](int64_t v) { return g.constant(at::scalar_tensor(v, at::kLong)); };
  Value* n = g.cast(g.input(0), at::kLong);
  Value* count = onesided ? g.op("Add", {g.op("Div", {n, scalar(2)}), scalar(1)}) : n;
  Value* k = g.op("Range", {scalar(0), count, scalar(1)});
  if (!onesided) {  // k >= (n + 1) / 2 wraps to k - n
    Value* half = g.op("Div", {g.op("Add", {n, scalar(1)}), scalar(2)});
    k = g.op("Where", {g.op("Less", {k, half}), k, g.op("Sub", {k, n})});
  }
  Value* den = g.op("Mul", {g.cast(n, at::kDouble), g.constant_scalar(d, at::kDouble)});
  return g.cast(g.op("Div", {g.cast(k, at::kDouble), den}), dt);
}

// Slicing a complex tensor: the same axis of its pairs (a negative one one further from the end).
int64_t pair_axis(int64_t dim) { return dim < 0 ? dim - 1 : dim; }

Outputs slice(SymbolicContext& g) {
  int64_t axis = pair_axis(g.is_none(1) ? 0 : g.i(1));
  int64_t start = g.is_none(2) ? 0 : g.i(2);
  int64_t end = g.is_none(3) ? kInt64Max : g.i(3);
  int64_t step = g.num_inputs() > 4 && !g.is_none(4) ? g.i(4) : 1;
  return g.complex_result(
      g.op("Slice", {g.input(0), g.constant_ints({start}), g.constant_ints({end}),
                     g.constant_ints({axis}), g.constant_ints({step})}));
}

// size(self[, dim]) of a complex tensor: its pairs' shape without the last dim.
Outputs size(SymbolicContext& g) {
  Value* shape = g.op("Shape", {g.input(0)});
  if (g.num_inputs() == 1)
    return g.op("Slice",
                {shape, g.constant_ints({0}), g.constant_ints({-1}), g.constant_ints({0})});
  return g.op("Gather", {shape, g.constant(at::scalar_tensor(pair_axis(g.i(1)), at::kLong))},
              {{"axis", int64_t{0}}});
}

Outputs select(SymbolicContext& g) {
  return g.complex_result(g.op("Gather",
                               {g.input(0), g.constant(at::scalar_tensor(g.i(2), at::kLong))},
                               {{"axis", pair_axis(g.i(1))}}));
}

// stft(self, n_fft, hop_length, win_length, window, normalized, onesided, return_complex): the
// frames gathered by index ([frames, n_fft] from Range), windowed, and a DFT along them, giving
// [batch, frames, bins, 2], transposed to torch's [batch, bins, frames]. Not ONNX's STFT: ONNX
// 1.12's shape inference counts its frames wrongly ((length - n_fft / 2) / hop), so the checker
// would reject a correct model. A window shorter than n_fft is zero-padded on both sides, as
// torch centres it.
Outputs stft(SymbolicContext& g) {
  if (g.opset() < 17) g.unsupported_below(17, "stft (ONNX's DFT)");
  if (g.num_inputs() != 8) g.fail("expected the 8 arguments of aten::stft");
  if (g.is_complex(0)) g.fail("stft of a complex signal is not supported (a real one is)");
  at::ScalarType rt = real_type(g, 0);
  int64_t rank = g.rank(0);
  if (rank != 1 && rank != 2)
    g.fail("stft takes a 1-D or 2-D signal, got rank " + std::to_string(rank));
  int64_t n_fft = g.i(1);
  int64_t hop = g.is_none(2) ? n_fft / 4 : g.i(2);
  int64_t win_length = g.is_none(3) ? n_fft : g.i(3);
  if (n_fft < 1 || hop < 1 || win_length < 1 || win_length > n_fft)
    g.fail("n_fft " + std::to_string(n_fft) + ", hop_length " + std::to_string(hop) +
           " and win_length " + std::to_string(win_length) +
           " must be positive, with win_length <= n_fft");
  bool onesided = g.is_none(6) ? true : g.b(6);
  bool return_complex = !g.is_none(7) && g.b(7);
  Value* x = input_as(g, 0, rt);
  if (rank == 1) x = unsqueeze(g, x, {0});
  auto scalar = [&](int64_t v) { return g.constant(at::scalar_tensor(v, at::kLong)); };
  // frames = (length - n_fft) / hop + 1; frame f holds samples f * hop + [0, n_fft).
  Value* length = g.op("Gather", {g.op("Shape", {x}), scalar(1)}, {{"axis", int64_t{0}}});
  Value* frames =
      g.op("Add", {g.op("Div", {g.op("Sub", {length, scalar(n_fft)}), scalar(hop)}), scalar(1)});
  Value* starts = g.op("Mul", {g.op("Range", {scalar(0), frames, scalar(1)}), scalar(hop)});
  Value* offsets = g.constant(at::arange(n_fft, at::kLong));
  Value* index = g.op("Add", {unsqueeze(g, starts, {1}), offsets});
  Value* framed = g.op("Gather", {x, index}, {{"axis", int64_t{1}}});  // [batch, frames, n_fft]
  Value* window = g.is_none(4) ? g.constant(at::ones({win_length}, rt)) : input_as(g, 4, rt);
  if (win_length < n_fft) {
    int64_t left = (n_fft - win_length) / 2;
    window = g.op("Pad", {window, g.constant_ints({left, n_fft - win_length - left})});
  }
  framed = unsqueeze(g, g.op("Mul", {framed, window}), {-1});
  Value* y = dft(g, framed, 2, false, onesided, std::nullopt);  // [batch, frames, bins, 2]
  y = g.op("Transpose", {y}, {{"perm", ir::Ints{0, 2, 1, 3}}});
  if (g.b(5)) y = g.op("Mul", {y, g.constant_scalar(1.0 / std::sqrt(double(n_fft)), rt)});
  if (rank == 1) y = squeeze(g, y, {0});
  return return_complex ? g.complex_result(y) : y;
}

const std::map<std::string, SymbolicFn>& rules() {
  static const std::map<std::string, SymbolicFn> r = {
      {"aten::fft_fft", [](SymbolicContext& g) { return fft1(g, false); }},
      {"aten::fft_ifft", [](SymbolicContext& g) { return fft1(g, true); }},
      {"aten::fft_rfft", [](SymbolicContext& g) { return rfftn(g, plan1(g), norm_arg(g, 3)); }},
      {"aten::fft_irfft", [](SymbolicContext& g) { return irfftn(g, plan1(g), norm_arg(g, 3)); }},
      {"aten::fft_fft2",
       [](SymbolicContext& g) {
         return fftn(g, false, plan(g, 1, 2, {-2, -1}), norm_arg(g, 3));
       }},
      {"aten::fft_ifft2",
       [](SymbolicContext& g) {
         return fftn(g, true, plan(g, 1, 2, {-2, -1}), norm_arg(g, 3));
       }},
      {"aten::fft_fftn",
       [](SymbolicContext& g) { return fftn(g, false, plan(g, 1, 2, {}), norm_arg(g, 3)); }},
      {"aten::fft_ifftn",
       [](SymbolicContext& g) { return fftn(g, true, plan(g, 1, 2, {}), norm_arg(g, 3)); }},
      {"aten::fft_rfft2",
       [](SymbolicContext& g) {
         return rfftn(g, plan(g, 1, 2, {-2, -1}), norm_arg(g, 3));
       }},
      {"aten::fft_rfftn",
       [](SymbolicContext& g) { return rfftn(g, plan(g, 1, 2, {}), norm_arg(g, 3)); }},
      {"aten::fft_irfft2",
       [](SymbolicContext& g) {
         return irfftn(g, plan(g, 1, 2, {-2, -1}), norm_arg(g, 3));
       }},
      {"aten::fft_irfftn",
       [](SymbolicContext& g) { return irfftn(g, plan(g, 1, 2, {}), norm_arg(g, 3)); }},
      // hfft(x) is irfft(conj(x)) and ihfft(x) conj(rfft(x)), each with the norm's direction
      // swapped (hfft transforms forward).
      {"aten::fft_hfft",
       [](SymbolicContext& g) { return irfftn(g, plan1(g), swapped_norm(g, 3), true); }},
      {"aten::fft_ihfft",
       [](SymbolicContext& g) { return rfftn(g, plan1(g), swapped_norm(g, 3), true); }},
      {"aten::fft_fftshift", [](SymbolicContext& g) { return shift(g, false); }},
      {"aten::fft_ifftshift", [](SymbolicContext& g) { return shift(g, true); }},
      {"aten::fft_fftfreq", [](SymbolicContext& g) { return fftfreq(g, false); }},
      {"aten::fft_rfftfreq", [](SymbolicContext& g) { return fftfreq(g, true); }},
      {"aten::view_as_real", view_as_real},
      {"aten::view_as_complex", view_as_complex},
      {"aten::real", real},
      {"aten::imag", imag},
      {"aten::angle", angle},
      {"aten::conj", conj_op},
      {"aten::complex", complex_of},
      {"aten::polar", polar},
      {"aten::stft", stft},
      {"aten::atan2",
       [](SymbolicContext& g) -> Outputs {
         at::ScalarType rt = pair_type(g, 0, 1);
         return atan2(g, input_as(g, 0, rt), input_as(g, 1, rt), rt);
       }},
  };
  return r;
}

// Ops of real tensors that also take complex ones: only through the converter's complex path.
const std::map<std::string, SymbolicFn>& complex_only_rules() {
  static const std::map<std::string, SymbolicFn> r = {
      {"aten::conj_physical", conj_op},
      {"aten::_conj", conj_op},
      {"aten::resolve_conj", [](SymbolicContext& g) -> Outputs { return identity_result(g, 0); }},
      {"aten::resolve_neg", [](SymbolicContext& g) -> Outputs { return identity_result(g, 0); }},
      {"aten::mul", mul},
      {"aten::div", div},
      {"aten::add", [](SymbolicContext& g) { return add_sub(g, "Add", false); }},
      {"aten::sub", [](SymbolicContext& g) { return add_sub(g, "Sub", false); }},
      {"aten::rsub", [](SymbolicContext& g) { return add_sub(g, "Sub", true); }},
      {"aten::neg",
       [](SymbolicContext& g) -> Outputs { return g.complex_result(g.op("Neg", {g.input(0)})); }},
      {"aten::abs",
       [](SymbolicContext& g) -> Outputs {
         return g.op("Sqrt", {reduce(g, "ReduceSumSquare", g.input(0), {{-1}}, false)});
       }},
      {"aten::clone", [](SymbolicContext& g) -> Outputs { return identity_result(g, 0); }},
      {"aten::contiguous", [](SymbolicContext& g) -> Outputs { return identity_result(g, 0); }},
      {"aten::detach", [](SymbolicContext& g) -> Outputs { return identity_result(g, 0); }},
      {"aten::slice", slice},
      {"aten::size", size},
      {"aten::select", select},
  };
  return r;
}

// The complex-only ops are registered as symbolics too: in scripted code, where values carry no
// types, fft_rfft(x) of a real x reaches the converter's ordinary path.
const bool registered = [] {
  for (const auto& [name, fn] : rules()) {
    bool shift = name.find("shift") != std::string::npos;
    bool freq = name.find("freq") != std::string::npos;
    bool dft = (name.rfind("aten::fft_", 0) == 0 && !shift && !freq) || name == "aten::stft";
    detail::register_builtin(name, dft ? 17 : shift ? 10 : name == "aten::atan2" ? 11 : 9, fn);
  }
  return true;
}();

}  // namespace
}  // namespace tonnx::sym

namespace tonnx::sym {
const SymbolicFn* complex_rule(const std::string& qualname) {
  // An in-place op (mul_) by its functional rule: the trace rewired later uses to its output.
  std::string name = qualname;
  if (name.size() > 1 && name.back() == '_' && name[name.size() - 2] != '_') name.pop_back();
  for (const auto* table : {&rules(), &complex_only_rules()}) {
    auto it = table->find(name);
    if (it != table->end()) return &it->second;
  }
  return nullptr;
}
}  // namespace tonnx::sym
