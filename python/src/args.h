// engram_conformance._core's arguments: what a Python value may be, checked as the CLI
// checks its options (conformance/cli/common.h ParseDecimal, IntIn), before
// the reference sees it. A wrong Python type raises TypeError; a value the
// rule refuses raises engram.Error (engram::Error) naming the argument, the
// rule and the value as it was passed. Nothing is converted silently: no bool
// as an integer, no float truncated, no uint64 wrapped, no mask ignored.
#ifndef ENGRAM_PYTHON_SRC_ARGS_H_
#define ENGRAM_PYTHON_SRC_ARGS_H_

#include <Python.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>

namespace engram::py {

namespace nb = nanobind;

// The bounds of an integer argument and where they come from (the CLI's words:
// "must be an integer in [lo, hi] (why), got X").
struct IntRule {
  int64_t lo;
  int64_t hi;
  std::string why;
};

// An integer argument: an int (or anything with __index__: numpy and torch
// integer scalars), or a str that is a decimal integer by the CLI's rule
// (ParseDecimal: digits, optionally after '-'). A bool, a float (5.0 too:
// Python's range() and numpy refuse it as well) or another type: TypeError.
int64_t Int(nb::handle v, const char* name, const IntRule& rule);
// As Int, None giving nullopt.
std::optional<int64_t> OptionalInt(nb::handle v, const char* name, const IntRule& rule);
// A real number: int, float or a numpy/torch real scalar; not a bool or a str.
double Real(nb::handle v, const char* name);
// True or False (numpy.bool_ too); not 0/1.
bool Bool(nb::handle v, const char* name);
// A str; `what` says what it names ("a suite name").
std::string Str(nb::handle v, const char* name, const char* what);

// What the values of an array argument are.
enum class Elements {
  kInt64,  // ids: any integer dtype, every value an int64 (§HASH.1)
  kE4M3,   // FP8 codes: integers in [0, 255] (§STO.1); ml_dtypes float8_e4m3fn as its bytes
  kE8M0,   // FP8 scales: integers in [0, 255] (§STO.2); ml_dtypes float8_e8m0fnu as its bytes
  kBf16,   // bf16 bit patterns: uint16 or int16 arrays (the bits), ml_dtypes bfloat16, or ints in [0, 65535] (§FUS.1)
  kReal,   // real values: float or integer dtypes, as float64
};

// An array argument read into host memory: a numpy array (any layout; masked
// arrays refused), anything with the buffer protocol, or nested lists/tuples of
// scalars (each by the scalar rule). Torch tensors reach here as numpy views
// (engram/_kind.py). `data` is the values in C order.
template <class T>
struct Array {
  std::vector<size_t> shape;
  std::span<const T> data;
  std::vector<T> own;                      // the values, unless `view` holds them
  std::shared_ptr<Py_buffer> view;         // a zero-copy C-contiguous buffer of T
  size_t size() const { return data.size(); }
  size_t ndim() const { return shape.size(); }
};

Array<int64_t> Int64Array(nb::handle v, const char* name);
Array<uint8_t> ByteArray(nb::handle v, const char* name, Elements e);  // kE4M3 or kE8M0
Array<uint16_t> Bf16Array(nb::handle v, const char* name);
Array<double> RealArray(nb::handle v, const char* name);

// "(2, 3)": a shape as numpy prints it.
std::string ShapeText(const std::vector<size_t>& shape);

// `out`: a writable C-contiguous int64 numpy array (exactly numpy.ndarray, not
// a subclass: a masked array's mask would be ignored).
class OutInt64 {
 public:
  OutInt64(nb::handle v, const char* name);
  ~OutInt64();
  OutInt64(const OutInt64&) = delete;
  OutInt64& operator=(const OutInt64&) = delete;
  int64_t* data() const { return static_cast<int64_t*>(view_.buf); }
  std::vector<size_t> shape() const;
  bool Is(size_t a, size_t b, size_t c) const;  // of shape (a, b, c), without allocating

 private:
  Py_buffer view_{};
};

// `v` is exactly a numpy.ndarray (not a subclass).
bool IsNdarray(nb::handle v);

}  // namespace engram::py

#endif  // ENGRAM_PYTHON_SRC_ARGS_H_
