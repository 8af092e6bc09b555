// §HASH engram_conformance._core.hash, trace_json and HashState: reference/hash.cc on numpy buffers.
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "base/error.h"
#include "python/src/args.h"
#include "python/src/bind.h"
#include "reference/hash.h"
#include "reference/layout.h"

namespace engram::py {
namespace {

using namespace nb::literals;

const IntRule kCount{0, kInt64Max, "a number of ids"};

// The ids argument: a C-contiguous int64 numpy array read in place (a decode
// step, T = 1, counts its microseconds), anything else through the element
// rules (args.h).
class Ids {
 public:
  explicit Ids(nb::handle v) {
    if (IsNdarray(v) && PyObject_GetBuffer(v.ptr(), &view_, PyBUF_FORMAT | PyBUF_ND | PyBUF_C_CONTIGUOUS) == 0) {
      const char* f = view_.format == nullptr ? "B" : view_.format;
      if (*f == '<' || *f == '=' || *f == '@') ++f;
      if (view_.ndim == 1 && view_.itemsize == 8 && (std::strcmp(f, "l") == 0 || std::strcmp(f, "q") == 0)) {
        held_ = true;
        span_ = std::span<const int64_t>(static_cast<const int64_t*>(view_.buf), static_cast<size_t>(view_.shape[0]));
        return;
      }
      PyBuffer_Release(&view_);
    }
    PyErr_Clear();
    array_ = Int64Array(v, "ids");
    if (array_.ndim() != 1) {
      throw engram::Error("ids: shape " + ShapeText(array_.shape) + "; expected one sequence [T] (§HASH.4)");
    }
    span_ = array_.data;
  }
  ~Ids() {
    if (held_) PyBuffer_Release(&view_);
  }
  Ids(const Ids&) = delete;
  Ids& operator=(const Ids&) = delete;
  std::span<const int64_t> span() const { return span_; }

 private:
  Py_buffer view_{};
  bool held_ = false;
  Array<int64_t> array_;
  std::span<const int64_t> span_;
};

// §HASH.4 rows[n][layers][columns] of the next n ids of `state` (§HASH.6
// AppendInto), into `out` when given (a reused buffer is what a serving
// engine hashes into, and what `engram bench hash` measures), else into a
// new numpy array.
nb::object Append(engram::HashState& state, const engram::Layout& l, nb::handle ids_obj, nb::object out) {
  const Ids ids(ids_obj);
  const size_t n = ids.span().size(), layers = l.layers.size(), cols = static_cast<size_t>(l.columns());
  nb::object result = out;
  if (out.is_none()) {
    // numpy.empty, looked up once.
    static nb::object* empty = new nb::object(nb::module_::import_("numpy").attr("empty"));
    static nb::object* int64 = new nb::object(nb::module_::import_("numpy").attr("int64"));
    result = (*empty)(nb::make_tuple(n, layers, cols), *int64);
  }
  const OutInt64 rows_buf(result, "out");
  if (!rows_buf.Is(n, layers, cols)) {
    throw engram::Error("out: shape " + ShapeText(rows_buf.shape()) + " but " + std::to_string(n) + " ids need " +
                        ShapeText({n, layers, cols}));
  }
  std::span<int64_t> rows(rows_buf.data(), n * layers * cols);
  if (n >= 4096) {
    nb::gil_scoped_release release;  // long sequences: let other Python threads run
    state.AppendInto(ids.span(), rows);
  } else {
    state.AppendInto(ids.span(), rows);
  }
  return result;
}

// §HASH.6 The incremental state; holds its layout (keep_alive).
struct PyHashState {
  const PyLayout* layout;
  engram::HashState state;
};

ojson TraceJson(const engram::PositionTrace& t) {
  return {{"window", t.window}, {"blocked", t.blocked},   {"tokens", t.tokens},
          {"mixes", t.mixes},   {"residues", t.residues}, {"rows", t.rows}};
}

// §HASH.2-§HASH.4 the intermediates of every position, or of `position` (one of the T).
std::string TraceText(nb::handle layout, nb::handle ids_obj, nb::handle position) {
  const PyLayout& l = LayoutArg(layout);
  const Ids ids(ids_obj);
  const int64_t t = static_cast<int64_t>(ids.span().size());
  std::optional<int64_t> at;
  if (!position.is_none()) {
    if (t == 0) throw engram::Error("position: the ids are empty: there is no position to explain");
    at = Int(position, "position", {0, t - 1, "a position of the " + std::to_string(t) + " ids"});
  }
  const auto traces = engram::TraceSequence(l.layout, ids.span());
  if (at) return TraceJson(traces[static_cast<size_t>(*at)]).dump();
  ojson out = ojson::array();
  for (const auto& tr : traces) out.push_back(TraceJson(tr));
  return out.dump();
}

// §HASH.7 A state from what export_json gave (as a dict), with room for `capacity` rollbacks.
PyHashState ImportState(nb::handle layout, nb::handle history, nb::handle capacity) {
  const PyLayout& l = LayoutArg(layout);
  if (!PyDict_Check(history.ptr())) {
    throw nb::type_error(("history: must be a dict (what HashState.export() gives), got a " +
                          std::string(Py_TYPE(history.ptr())->tp_name))
                             .c_str());
  }
  const auto c = static_cast<size_t>(Int(capacity, "rollback_capacity", kCount));
  const engram::HashHistory h =
      engram::HistoryFromJson(nlohmann::json(ParseJson(JsonText(history), "history")), "history");
  return PyHashState{&l, engram::HashState::Import(l.layout, h, c)};
}

void BindHashState(nb::module_& m) {
  nb::class_<PyHashState>(m, "HashState", "§HASH.6 (use engram_conformance.HashState).")
      .def("__init__",
           [](PyHashState* self, nb::handle layout, nb::handle capacity) {
             const PyLayout& l = LayoutArg(layout);
             const auto c = static_cast<size_t>(Int(capacity, "rollback_capacity", kCount));
             new (self) PyHashState{&l, engram::HashState(l.layout, c)};
           },
           "layout"_a.none(), "rollback_capacity"_a.none() = 0, nb::keep_alive<1, 2>(),
           nb::sig("def __init__(self, layout: Layout, rollback_capacity: int = 0) -> None"))
      .def("append",
           [](PyHashState& s, nb::handle ids, nb::object out) { return Append(s.state, s.layout->layout, ids, out); },
           "ids"_a.none(), "out"_a.none() = nb::none(),
           nb::sig("def append(self, ids: numpy.typing.ArrayLike, out: numpy.typing.NDArray[numpy.int64] | None = None) "
                   "-> numpy.typing.NDArray[numpy.int64]"),
           "§HASH.6 rows[len(ids), layers, columns] of the next ids, into `out` when given.")
      .def("rollback", [](PyHashState& s, nb::handle k) { s.state.Rollback(static_cast<size_t>(Int(k, "k", kCount))); },
           "k"_a.none(), nb::sig("def rollback(self, k: int) -> None"), "§HASH.6 back k positions.")
      .def("fork", [](const PyHashState& s) { return PyHashState(s); }, nb::keep_alive<0, 1>())
      .def_prop_ro("position", [](const PyHashState& s) { return s.state.position(); })
      .def_prop_ro("rollback_capacity", [](const PyHashState& s) { return s.state.rollback_capacity(); })
      .def("history", [](const PyHashState& s) { return s.state.History(); })
      .def("export_json", [](const PyHashState& s) { return engram::HistoryToJson(s.state.Export()).dump(); },
           "§HASH.7")
      .def_static("import_json", &ImportState, "layout"_a.none(), "history"_a.none(),
                  "rollback_capacity"_a.none() = 0, nb::keep_alive<0, 1>(),
                  nb::sig("def import_json(layout: Layout, history: dict[str, typing.Any], rollback_capacity: int = 0) "
                          "-> HashState"),
                  "§HASH.7");
}

}  // namespace

void BindHash(nb::module_& m) {
  m.def("hash", [](nb::handle layout, nb::handle ids, nb::object out) {
    const PyLayout& l = LayoutArg(layout);
    engram::HashState state = *l.fresh;
    return Append(state, l.layout, ids, out);
  }, "layout"_a.none(), "ids"_a.none(), "out"_a.none() = nb::none(),
        nb::sig("def hash(layout: Layout, ids: numpy.typing.ArrayLike, out: numpy.typing.NDArray[numpy.int64] | None = "
                "None) -> numpy.typing.NDArray[numpy.int64]"),
        "§HASH.4 rows[T, layers, columns]; ids: any integer array or sequence whose values are int64s.");
  m.def("trace_json", &TraceText, "layout"_a.none(), "ids"_a.none(), "position"_a.none() = nb::none(),
        nb::sig("def trace_json(layout: Layout, ids: numpy.typing.ArrayLike, position: int | None = None) -> str"),
        "§HASH.2-§HASH.4 the intermediates of every position, or of `position`, as JSON text.");
  BindHashState(m);
}

}  // namespace engram::py
