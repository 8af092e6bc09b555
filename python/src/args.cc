// engram_conformance._core's arguments (args.h): the CLI's rules for integers, applied to
// Python values, and the element rules of array arguments.
#include "python/src/args.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <nanobind/stl/string.h>

#include "base/error.h"
#include "conformance/cli/common.h"

namespace engram::py {
namespace {

PyTypeObject* NdarrayType() {
  static PyTypeObject* type = [] {
    nb::object t = nb::module_::import_("numpy").attr("ndarray");
    return reinterpret_cast<PyTypeObject*>(t.release().ptr());  // held for the process's lifetime
  }();
  return type;
}

std::string TypeName(nb::handle v) { return Py_TYPE(v.ptr())->tp_name; }

bool IsBoolLike(nb::handle v) {
  if (PyBool_Check(v.ptr())) return true;
  const std::string t = TypeName(v);
  return t == "numpy.bool_" || t == "numpy.bool";
}

// What a value is, for a TypeError: "a bool", "a float", "a numpy.float64".
std::string Kind(nb::handle v) {
  if (v.is_none()) return "None";
  const std::string t = TypeName(v);
  return (std::string("aeiou").find(t[0]) != std::string::npos ? "an " : "a ") + t;
}

// The value as the caller passed it: repr() for a str (its quotes show), str() otherwise.
std::string Shown(nb::handle v) {
  PyObject* r = PyUnicode_Check(v.ptr()) ? PyObject_Repr(v.ptr()) : PyObject_Str(v.ptr());
  if (r == nullptr) {
    PyErr_Clear();
    return "<" + Kind(v) + ">";
  }
  Py_ssize_t n = 0;
  const char* s = PyUnicode_AsUTF8AndSize(r, &n);
  std::string text = s != nullptr ? std::string(s, static_cast<size_t>(n)) : "<" + Kind(v) + ">";
  if (s == nullptr) PyErr_Clear();
  Py_DECREF(r);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

std::string Head(const char* name, const IntRule& rule) {
  return std::string(name) + ": must be an integer in [" + std::to_string(rule.lo) + ", " + std::to_string(rule.hi) +
         "]" + (rule.why.empty() ? "" : " (" + rule.why + ")");
}

[[noreturn]] void TypeError(const std::string& message) { throw nb::type_error(message.c_str()); }

// The integer a scalar holds, or why it holds none: the CLI's rule (args.h Int).
// Returns false with `type_problem` set for a wrong Python type, with
// `overflow` set for an integer outside int64 (its digits are in Shown).
struct Scalar {
  bool ok = false;
  int64_t value = 0;
  std::string type_problem;  // non-empty: TypeError
  std::string value_problem;  // non-empty: engram.Error (before the range check)
  bool overflow = false;      // an integer outside int64 (out of any range the rules name)
};

Scalar ScalarInt(nb::handle v) {
  Scalar s;
  PyObject* p = v.ptr();
  if (v.is_none()) {
    s.type_problem = "None";
  } else if (IsBoolLike(v)) {
    s.type_problem = Kind(v) + ", not an integer";
  } else if (PyUnicode_Check(p)) {
    const char* text = PyUnicode_AsUTF8(p);
    if (text == nullptr) {
      PyErr_Clear();
      s.value_problem = "a str that is not a decimal 64-bit integer";
      return s;
    }
    const std::optional<int64_t> d = cli::ParseDecimal(text);
    if (!d) {
      s.value_problem = "a str that is not a decimal 64-bit integer (the digits 0-9, optionally after '-', as the CLI "
                        "reads integers)";
      return s;
    }
    s.ok = true;
    s.value = *d;
  } else if (PyLong_Check(p) || (!PyFloat_Check(p) && PyIndex_Check(p))) {
    PyObject* index = PyNumber_Index(p);
    if (index == nullptr) {
      PyErr_Clear();
      s.type_problem = Kind(v) + ", not an integer";
      return s;
    }
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(index, &overflow);
    Py_DECREF(index);
    if (overflow != 0) {
      s.value_problem = "outside the 64-bit integer range";
      s.overflow = true;
      return s;
    }
    s.ok = true;
    s.value = static_cast<int64_t>(x);
  } else {
    s.type_problem = Kind(v) + ", not an integer";
  }
  return s;
}

// The elements of an array as the reader finds them.
struct Elem {
  enum Kind { kSigned, kUnsigned, kReal, kObject } kind = kSigned;
  int64_t s = 0;
  uint64_t u = 0;
  double d = 0;
  PyObject* o = nullptr;
};

// "position 3" (one dimension) or "position [1, 7]".
std::string Position(size_t flat, const std::vector<size_t>& shape) {
  if (shape.size() <= 1) return "position " + std::to_string(flat);
  std::vector<size_t> idx(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    const size_t n = shape[k] == 0 ? 1 : shape[k];
    idx[k] = flat % n;
    flat /= n;
  }
  std::string s = "position [";
  for (size_t k = 0; k < idx.size(); ++k) s += (k ? ", " : "") + std::to_string(idx[k]);
  return s + "]";
}

double HalfToDouble(uint16_t h) {
  const int exp = (h >> 10) & 0x1F;
  const int mant = h & 0x3FF;
  double v;
  if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), -24);
  } else if (exp == 31) {
    v = mant != 0 ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else {
    v = std::ldexp(static_cast<double>(mant + 1024), exp - 25);
  }
  return (h & 0x8000) ? -v : v;
}

// What each kind of array argument accepts.
struct Spec {
  Elements elements;
  IntRule rule;          // for the integer kinds: each value's bounds
  const char* expect;    // the dtypes it takes, for a TypeError
  const char* what;      // "an E4M3 code"
};

Spec SpecOf(Elements e) {
  switch (e) {
    case Elements::kInt64:
      return {e, {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), "the ids are int64, §HASH.1"},
              "an integer dtype (the ids are int64, §HASH.1)", "a 64-bit integer"};
    case Elements::kE4M3:
      return {e, {0, 255, "one byte, §STO.1"},
              "an integer dtype (codes are bytes 0-255, §STO.1), or float8_e4m3fn (ml_dtypes, torch)", "an E4M3 code"};
    case Elements::kE8M0:
      return {e, {0, 255, "one byte, §STO.2"},
              "an integer dtype (scales are bytes 0-255, §STO.2), or float8_e8m0fnu (ml_dtypes, torch)",
              "an E8M0 scale"};
    case Elements::kBf16:
      return {e, {0, 65535, "a bf16 bit pattern, §FUS.1"},
              "uint16 or int16 (bf16 values are given as their bit patterns, §FUS.1), ml_dtypes bfloat16 or a torch "
              "bfloat16 tensor",
              "a bf16 bit pattern"};
    case Elements::kReal:
      break;
  }
  return {e, {0, 0, ""}, "a real dtype (float or integer)", "a real number"};
}

bool IsMasked(nb::handle v) {
  PyObject* modules = PyImport_GetModuleDict();
  PyObject* ma = PyDict_GetItemString(modules, "numpy.ma");  // borrowed; absent: no masked array can exist
  if (ma == nullptr) return false;
  PyObject* cls = PyObject_GetAttrString(ma, "MaskedArray");
  if (cls == nullptr) {
    PyErr_Clear();
    return false;
  }
  const int r = PyObject_IsInstance(v.ptr(), cls);
  Py_DECREF(cls);
  if (r < 0) PyErr_Clear();
  return r == 1;
}

// The dtype of a numpy array as numpy names it ("float64"), else "".
std::string DtypeName(nb::handle v) {
  if (!PyObject_TypeCheck(v.ptr(), NdarrayType())) return "";
  PyObject* dtype = PyObject_GetAttrString(v.ptr(), "dtype");
  PyObject* text = dtype != nullptr ? PyObject_Str(dtype) : nullptr;
  const char* s = text != nullptr ? PyUnicode_AsUTF8(text) : nullptr;
  std::string name = s != nullptr ? s : "";
  Py_XDECREF(text);
  Py_XDECREF(dtype);
  if (s == nullptr) PyErr_Clear();
  return name;
}

// The elements of `v` in C order, handed one by one to `each(elem, flat)`,
// with the shape. Refuses what `spec` does not take, by dtype, before any
// element is read.
class Reader {
 public:
  Reader(nb::handle v, const char* name, const Spec& spec) : name_(name), spec_(spec) { Open(v); }
  ~Reader() {
    if (has_view_) PyBuffer_Release(&view_);
  }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  const std::vector<size_t>& shape() const { return shape_; }
  size_t size() const {
    size_t n = 1;
    for (size_t s : shape_) n *= s;
    return n;
  }
  // The zero-copy buffer when the elements are C-contiguous values of `format` (one of "q", "B", "H", "d").
  bool Contiguous(char format) const { return has_view_ && contiguous_ && code_ == format; }
  std::shared_ptr<Py_buffer> TakeView() {
    auto held = std::shared_ptr<Py_buffer>(new Py_buffer(view_), [](Py_buffer* b) {
      PyBuffer_Release(b);
      delete b;
    });
    has_view_ = false;
    return held;
  }
  const void* buf() const { return view_.buf; }
  // true when the buffer holds 16-bit integers (bf16 bits given by dtype, not by value)
  bool Bits16() const { return has_view_ && view_.itemsize == 2 && (code_ == 'h' || code_ == 'H'); }

  template <class F>
  void ForEach(F each) const {
    if (!has_view_) {
      for (size_t i = 0; i < leaves_.size(); ++i) {
        Elem e;
        e.kind = Elem::kObject;
        e.o = leaves_[i].ptr();
        each(e, i);
      }
      return;
    }
    const size_t n = size();
    if (n == 0) return;
    std::vector<size_t> idx(shape_.size(), 0);
    const char* base = static_cast<const char*>(view_.buf);
    for (size_t flat = 0; flat < n; ++flat) {
      const char* p = base;
      for (size_t k = 0; k < idx.size(); ++k) p += static_cast<ptrdiff_t>(idx[k]) * view_.strides[k];
      each(Read(p), flat);
      for (size_t k = idx.size(); k-- > 0;) {
        if (++idx[k] < shape_[k]) break;
        idx[k] = 0;
      }
    }
  }

 private:
  void Open(nb::handle v) {
    PyObject* p = v.ptr();
    if (v.is_none() || PyUnicode_Check(p) || PyBytes_Check(p) || PyByteArray_Check(p) || PyLong_Check(p) ||
        PyFloat_Check(p) || PyBool_Check(p) || PyDict_Check(p)) {
      TypeError(std::string(name_) + ": must be an array (numpy, torch, or a list), got " + Shown(v) + " (" + Kind(v) +
                ")");
    }
    if (IsMasked(v)) {
      TypeError(std::string(name_) + ": a numpy masked array: its mask would be ignored (pass .filled(x) or "
                                     ".compressed() to say what the masked values are)");
    }
    nb::object obj = nb::borrow(v);
    // ml_dtypes' bf16 and FP8 arrays, which have no buffer format: their bits, or their values.
    const std::string dtype = DtypeName(v);
    const bool bits_dtype = dtype == "bfloat16" || dtype.rfind("float8_", 0) == 0;
    if (bits_dtype) {
      nb::object np = nb::module_::import_("numpy");
      if (spec_.elements == Elements::kReal) {
        obj = obj.attr("astype")(np.attr("float64"));
      } else if (spec_.elements == Elements::kBf16 && dtype == "bfloat16") {
        obj = obj.attr("view")(np.attr("uint16"));
      } else if ((spec_.elements == Elements::kE4M3 && dtype == "float8_e4m3fn") ||
                 (spec_.elements == Elements::kE8M0 && dtype == "float8_e8m0fnu")) {
        obj = obj.attr("view")(np.attr("uint8"));
      } else {
        TypeError(std::string(name_) + ": dtype " + dtype + "; expected " + spec_.expect);
      }
    }
    holder_ = obj;
    if (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr())) return Walk(obj);
    if (PyObject_CheckBuffer(obj.ptr())) return OpenBuffer(obj, dtype);
    if (PyObject_HasAttrString(obj.ptr(), "__array__") || PyObject_HasAttrString(obj.ptr(), "__array_interface__")) {
      nb::object a;
      try {
        a = nb::module_::import_("numpy").attr("asarray")(obj);
      } catch (const nb::python_error& e) {
        TypeError(std::string(name_) + ": " + Kind(v) + " could not be read as an array (" + e.what() + ")");
      }
      holder_ = a;
      return OpenBuffer(a, DtypeName(a));
    }
    if (PySequence_Check(obj.ptr())) {
      PyObject* list = PySequence_List(obj.ptr());
      if (list == nullptr) {
        PyErr_Clear();
        TypeError(std::string(name_) + ": " + Kind(v) + " is not an array");
      }
      holder_ = nb::steal(list);
      return Walk(holder_);
    }
    TypeError(std::string(name_) + ": must be an array (numpy, torch, or a list), got " + Shown(v) + " (" + Kind(v) +
              ")");
  }

  void OpenBuffer(nb::handle obj, const std::string& dtype) {
    if (PyObject_GetBuffer(obj.ptr(), &view_, PyBUF_RECORDS_RO) != 0) {
      PyErr_Clear();  // the exporter's own complaint: ours names the argument
      TypeError(std::string(name_) + ": dtype " + (dtype.empty() ? Kind(obj) : dtype) + " cannot be read; expected " +
                spec_.expect);
    }
    has_view_ = true;
    // A refusal below leaves the constructor, so no destructor releases the buffer: this does.
    auto fail = [this](const std::string& message) {
      PyBuffer_Release(&view_);
      has_view_ = false;
      TypeError(message);
    };
    for (int k = 0; k < view_.ndim; ++k) shape_.push_back(static_cast<size_t>(view_.shape[k]));
    contiguous_ = PyBuffer_IsContiguous(&view_, 'C') != 0;
    std::string f = view_.format != nullptr ? view_.format : "B";
    size_t at = 0;
    if (!f.empty() && (f[0] == '@' || f[0] == '=' || f[0] == '<' || f[0] == '>' || f[0] == '!')) {
      swap_ = (f[0] == '>' || f[0] == '!') && view_.itemsize > 1;
      at = 1;
    }
    const std::string code = f.substr(at);
    const std::string shown_dtype = dtype.empty() ? "with buffer format '" + f + "'" : dtype;
    if (code.size() != 1) {
      fail(std::string(name_) + ": dtype " + shown_dtype + "; expected " + spec_.expect);
    }
    code_ = code[0];
    switch (code_) {
      case 'b': case 'h': case 'i': case 'l': case 'q': case 'n': kind_ = Elem::kSigned; break;
      case 'B': case 'H': case 'I': case 'L': case 'Q': case 'N': kind_ = Elem::kUnsigned; break;
      case 'e': case 'f': case 'd': kind_ = Elem::kReal; break;
      case 'O': kind_ = Elem::kObject; break;
      default:  // '?' (bool) among them: a bool is not a number here
        fail(std::string(name_) + ": dtype " + shown_dtype + "; expected " + spec_.expect);
    }
    if (swap_) contiguous_ = false;  // the values need their bytes reversed
    const bool integer = kind_ == Elem::kSigned || kind_ == Elem::kUnsigned;
    if (spec_.elements == Elements::kReal) return;  // integer, real and object dtypes all hold real numbers
    if (kind_ == Elem::kReal) fail(std::string(name_) + ": dtype " + shown_dtype + "; expected " + spec_.expect);
    if (spec_.elements == Elements::kBf16 && integer && view_.itemsize != 2) {
      fail(std::string(name_) + ": dtype " + shown_dtype + "; expected " + spec_.expect);
    }
  }

  // Nested lists/tuples: the shape from the first element at each depth; every other must match.
  void Walk(nb::handle top) {
    nb::handle cur = top;
    while (PyList_Check(cur.ptr()) || PyTuple_Check(cur.ptr())) {
      const Py_ssize_t n = PySequence_Fast_GET_SIZE(cur.ptr());
      shape_.push_back(static_cast<size_t>(n));
      if (n == 0) break;
      cur = PySequence_Fast_GET_ITEM(cur.ptr(), 0);
    }
    WalkLevel(top, 0, std::vector<size_t>());
  }

  void WalkLevel(nb::handle seq, size_t depth, std::vector<size_t> at) {
    const bool is_seq = PyList_Check(seq.ptr()) || PyTuple_Check(seq.ptr());
    auto where = [&] {
      std::string s = "[";
      for (size_t k = 0; k < at.size(); ++k) s += (k ? ", " : "") + std::to_string(at[k]);
      return s + "]";
    };
    if (depth == shape_.size()) {
      if (is_seq) {
        throw Error(std::string(name_) + ": ragged nested lists: the item at " + where() + " is a sequence, the item at [" +
                    std::string(depth ? "0, ..., 0" : "") + "] is not");
      }
      leaves_.push_back(seq);
      return;
    }
    if (!is_seq) {
      throw Error(std::string(name_) + ": ragged nested lists: the item at " + where() +
                  " is not a sequence, but the shape from the first items is " + ShapeText(shape_));
    }
    const size_t n = static_cast<size_t>(PySequence_Fast_GET_SIZE(seq.ptr()));
    if (n != shape_[depth]) {
      throw Error(std::string(name_) + ": ragged nested lists: the item at " + where() + " has " + std::to_string(n) +
                  " items, but the shape from the first items is " + ShapeText(shape_));
    }
    for (size_t i = 0; i < n; ++i) {
      at.push_back(i);
      WalkLevel(PySequence_Fast_GET_ITEM(seq.ptr(), static_cast<Py_ssize_t>(i)), depth + 1, at);
      at.pop_back();
    }
  }

  Elem Read(const char* p) const {
    unsigned char b[16];
    const size_t n = static_cast<size_t>(view_.itemsize);
    std::memcpy(b, p, std::min<size_t>(n, sizeof b));
    if (swap_) std::reverse(b, b + n);
    Elem e;
    e.kind = kind_;
    switch (kind_) {
      case Elem::kSigned:
        if (n == 1) { int8_t x; std::memcpy(&x, b, 1); e.s = x; }
        else if (n == 2) { int16_t x; std::memcpy(&x, b, 2); e.s = x; }
        else if (n == 4) { int32_t x; std::memcpy(&x, b, 4); e.s = x; }
        else { int64_t x; std::memcpy(&x, b, 8); e.s = x; }
        break;
      case Elem::kUnsigned:
        if (n == 1) { e.u = b[0]; }
        else if (n == 2) { uint16_t x; std::memcpy(&x, b, 2); e.u = x; }
        else if (n == 4) { uint32_t x; std::memcpy(&x, b, 4); e.u = x; }
        else { uint64_t x; std::memcpy(&x, b, 8); e.u = x; }
        break;
      case Elem::kReal:
        if (n == 2) { uint16_t x; std::memcpy(&x, b, 2); e.d = HalfToDouble(x); }
        else if (n == 4) { float x; std::memcpy(&x, b, 4); e.d = x; }
        else { double x; std::memcpy(&x, b, 8); e.d = x; }
        break;
      case Elem::kObject:
        std::memcpy(&e.o, b, sizeof(PyObject*));
        break;
    }
    return e;
  }

  const char* name_;
  const Spec& spec_;
  nb::object holder_;  // what the buffer or the leaves belong to
  Py_buffer view_{};
  bool has_view_ = false;
  bool contiguous_ = false;
  bool swap_ = false;
  char code_ = 0;
  Elem::Kind kind_ = Elem::kSigned;
  std::vector<size_t> shape_;
  std::vector<nb::handle> leaves_;  // borrowed from holder_
};

// One integer element by `spec`'s rule; `flat` names its position.
int64_t IntElement(const Elem& e, size_t flat, const std::vector<size_t>& shape, const char* name, const Spec& spec) {
  const IntRule& r = spec.rule;
  auto refuse = [&](const std::string& shown) -> int64_t {
    throw Error(std::string(name) + ": " + Position(flat, shape) + " is " + shown + ": not " + spec.what +
                ", an integer in [" + std::to_string(r.lo) + ", " + std::to_string(r.hi) + "] (" + r.why + ")");
  };
  switch (e.kind) {
    case Elem::kSigned:
      if (e.s < r.lo || e.s > r.hi) return refuse(std::to_string(e.s));
      return e.s;
    case Elem::kUnsigned:
      if (r.hi < 0 || e.u > static_cast<uint64_t>(r.hi)) return refuse(std::to_string(e.u));
      return static_cast<int64_t>(e.u);
    case Elem::kReal:
      break;  // refused by dtype before
    case Elem::kObject: {
      nb::handle o(e.o);
      const Scalar s = ScalarInt(o);
      if (!s.type_problem.empty()) {
        TypeError(std::string(name) + ": " + Position(flat, shape) + " is " + Shown(o) + " (" + s.type_problem + ")");
      }
      if (s.overflow) return refuse(Shown(o));
      if (!s.value_problem.empty()) {
        throw Error(std::string(name) + ": " + Position(flat, shape) + " is " + Shown(o) + ": not " + spec.what + ", " +
                    s.value_problem);
      }
      if (s.value < r.lo || s.value > r.hi) return refuse(Shown(o));
      return s.value;
    }
  }
  return 0;
}

double RealElement(const Elem& e, size_t flat, const std::vector<size_t>& shape, const char* name) {
  switch (e.kind) {
    case Elem::kSigned: return static_cast<double>(e.s);
    case Elem::kUnsigned: return static_cast<double>(e.u);
    case Elem::kReal: return e.d;
    case Elem::kObject: return Real(nb::handle(e.o), (std::string(name) + ": " + Position(flat, shape)).c_str());
  }
  return 0;
}

template <class T>
Array<T> IntegerArray(nb::handle v, const char* name, const Spec& spec, char zero_copy) {
  Reader r(v, name, spec);
  Array<T> a;
  a.shape = r.shape();
  if (r.Contiguous(zero_copy)) {
    const T* data = static_cast<const T*>(r.buf());
    a.data = std::span<const T>(data, r.size());
    a.view = r.TakeView();
    return a;
  }
  const bool bits = spec.elements == Elements::kBf16 && r.Bits16();  // int16 bits are the pattern, sign and all
  a.own.resize(r.size());
  r.ForEach([&](const Elem& e, size_t flat) {
    if (bits) {
      a.own[flat] = static_cast<T>(e.kind == Elem::kSigned ? static_cast<uint16_t>(e.s) : static_cast<uint16_t>(e.u));
    } else {
      a.own[flat] = static_cast<T>(IntElement(e, flat, a.shape, name, spec));
    }
  });
  a.data = std::span<const T>(a.own.data(), a.own.size());
  return a;
}

}  // namespace

bool IsNdarray(nb::handle v) { return Py_TYPE(v.ptr()) == NdarrayType(); }

std::string ShapeText(const std::vector<size_t>& shape) {
  std::string s = "(";
  for (size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

int64_t Int(nb::handle v, const char* name, const IntRule& rule) {
  const Scalar s = ScalarInt(v);
  if (!s.type_problem.empty()) TypeError(Head(name, rule) + ", got " + Shown(v) + " (" + s.type_problem + ")");
  if (s.overflow) throw Error(Head(name, rule) + ", got " + Shown(v));
  if (!s.value_problem.empty()) throw Error(Head(name, rule) + ", got " + Shown(v) + " (" + s.value_problem + ")");
  if (s.value < rule.lo || s.value > rule.hi) throw Error(Head(name, rule) + ", got " + Shown(v));
  return s.value;
}

std::optional<int64_t> OptionalInt(nb::handle v, const char* name, const IntRule& rule) {
  if (v.is_none()) return std::nullopt;
  return Int(v, name, rule);
}

double Real(nb::handle v, const char* name) {
  PyObject* p = v.ptr();
  if (v.is_none() || IsBoolLike(v) || PyUnicode_Check(p) || PyBytes_Check(p)) {
    TypeError(std::string(name) + ": must be a real number (int or float), got " + Shown(v) + " (" + Kind(v) + ")");
  }
  if (PyFloat_Check(p)) return PyFloat_AS_DOUBLE(p);
  const double d = PyFloat_AsDouble(p);
  if (d == -1.0 && PyErr_Occurred()) {
    const bool overflow = PyErr_ExceptionMatches(PyExc_OverflowError);
    PyErr_Clear();
    if (overflow) throw Error(std::string(name) + ": " + Shown(v) + " is too large for a float64");
    TypeError(std::string(name) + ": must be a real number (int or float), got " + Shown(v) + " (" + Kind(v) + ")");
  }
  return d;
}

bool Bool(nb::handle v, const char* name) {
  if (PyBool_Check(v.ptr())) return v.ptr() == Py_True;
  if (IsBoolLike(v)) return PyObject_IsTrue(v.ptr()) == 1;
  TypeError(std::string(name) + ": must be True or False, got " + Shown(v) + " (" + Kind(v) + ")");
}

std::string Str(nb::handle v, const char* name, const char* what) {
  if (!PyUnicode_Check(v.ptr())) {
    TypeError(std::string(name) + ": must be a str (" + what + "), got " + Shown(v) + " (" + Kind(v) + ")");
  }
  return nb::cast<std::string>(v);
}

Array<int64_t> Int64Array(nb::handle v, const char* name) {
  return IntegerArray<int64_t>(v, name, SpecOf(Elements::kInt64), 'q');
}

Array<uint8_t> ByteArray(nb::handle v, const char* name, Elements e) {
  return IntegerArray<uint8_t>(v, name, SpecOf(e), 'B');
}

Array<uint16_t> Bf16Array(nb::handle v, const char* name) {
  return IntegerArray<uint16_t>(v, name, SpecOf(Elements::kBf16), 'H');
}

Array<double> RealArray(nb::handle v, const char* name) {
  const Spec spec = SpecOf(Elements::kReal);
  Reader r(v, name, spec);
  Array<double> a;
  a.shape = r.shape();
  if (r.Contiguous('d')) {
    a.data = std::span<const double>(static_cast<const double*>(r.buf()), r.size());
    a.view = r.TakeView();
    return a;
  }
  a.own.resize(r.size());
  r.ForEach([&](const Elem& e, size_t flat) { a.own[flat] = RealElement(e, flat, a.shape, name); });
  a.data = std::span<const double>(a.own.data(), a.own.size());
  return a;
}

OutInt64::OutInt64(nb::handle v, const char* name) {
  // The message is built only on a refusal: a decode step (T = 1) passes here once per token.
  auto expect = [name] {
    return std::string(name) + ": must be a writable C-contiguous int64 numpy array (or torch tensor)";
  };
  if (!IsNdarray(v)) TypeError(expect() + ", got " + Kind(v));
  if (PyObject_GetBuffer(v.ptr(), &view_, PyBUF_FORMAT | PyBUF_ND | PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) != 0) {
    PyErr_Clear();
    TypeError(expect() + "; this one is not C-contiguous or not writable");
  }
  const char* f = view_.format == nullptr ? "B" : view_.format;
  if (*f == '<' || *f == '=' || *f == '@') ++f;
  if (view_.itemsize != 8 || (std::strcmp(f, "l") != 0 && std::strcmp(f, "q") != 0)) {
    const std::string dtype = DtypeName(v);
    PyBuffer_Release(&view_);
    TypeError(expect() + ", got dtype " + dtype);
  }
}

OutInt64::~OutInt64() { PyBuffer_Release(&view_); }

bool OutInt64::Is(size_t a, size_t b, size_t c) const {
  return view_.ndim == 3 && static_cast<size_t>(view_.shape[0]) == a && static_cast<size_t>(view_.shape[1]) == b &&
         static_cast<size_t>(view_.shape[2]) == c;
}

std::vector<size_t> OutInt64::shape() const {
  std::vector<size_t> s;
  for (int k = 0; k < view_.ndim; ++k) s.push_back(static_cast<size_t>(view_.shape[k]));
  return s;
}

}  // namespace engram::py
