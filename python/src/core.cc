// engram._core — the nanobind bindings behind the Python module `engram`
// (docs/python.md). Every value computed here comes from the libraries the
// CLI links: engram::reference (one file per spec section), engram::vectors
// (the generators of §VEC and §CONF.7) and the runner's judge
// (conformance/runner/judge.cc, §CONF.4). Nothing is re-implemented: a port
// tested in-process is judged by the same code as `engram conform`.
//
// JSON crosses the boundary as text (Python's json keeps key order, and
// §CONF.4 compares in the vector file's key order); arrays cross as numpy
// buffers.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/vector.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "conformance/runner/judge.h"
#include "conformance/runner/random_run.h"
#include "conformance/runner/report.h"
#include "conformance/runner/runner.h"
#include "conformance/runner/shard.h"
#include "reference/config.h"
#include "reference/fusion.h"
#include "reference/hash.h"
#include "reference/layout.h"
#include "reference/storage.h"
#include "reference/token_map.h"
#include "vectors/compare.h"
#include "vectors/generator.h"
#include "vectors/manifest.h"
#include "vectors/random_cases.h"
#include "vectors/random_stream.h"
#include "vectors/trivial.h"

namespace nb = nanobind;
using namespace nb::literals;
using ojson = nlohmann::ordered_json;

namespace {

using I64In = nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using U16In = nb::ndarray<const uint16_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using U8In = nb::ndarray<const uint8_t, nb::c_contig, nb::device::cpu>;
using F64In = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;

// A numpy array that owns a heap buffer of `n` values of T.
template <class T>
nb::ndarray<nb::numpy, T> Owned(std::vector<size_t> shape) {
  size_t n = 1;
  for (size_t s : shape) n *= s;
  T* data = new T[n == 0 ? 1 : n];
  nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<T*>(p); });
  return nb::ndarray<nb::numpy, T>(data, shape.size(), shape.data(), owner);
}

template <class T>
nb::ndarray<nb::numpy, T> FromVector(const std::vector<T>& v, std::vector<size_t> shape) {
  auto out = Owned<T>(std::move(shape));
  if (!v.empty()) std::memcpy(out.data(), v.data(), v.size() * sizeof(T));
  return out;
}

ojson ParseJson(const std::string& text, const std::string& what) {
  try {
    return ojson::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw engram::Error(what + ": not JSON (" + std::string(e.what()) + ")");
  }
}

engram::Precision ParsePrecision(const std::string& p) {
  if (p == "float64") return engram::Precision::kFloat64;
  if (p == "float32") return engram::Precision::kFloat32;
  throw engram::Error("precision: '" + p + "' is neither 'float64' (the reference, §FUS.8) nor 'float32' (the mirror)");
}

// The configuration and layout of engram.Layout (§CFG, §LAY).
struct PyLayout {
  engram::EngramConfig config;
  engram::Layout layout;
  // A state at position 0, copied by hash(): cheaper than building one per
  // call (its per-column division-free moduli), which a T = 1 call would
  // otherwise spend most of its time on.
  std::optional<engram::HashState> fresh;
};

// §LAY.4, §TOK.5 V and the compressed pad as `engram hash` resolves them
// without a token map (conformance/cli/common.cc Load), or as a vector group
// gives them (compressedVocabSize, compressedPad).
void InitLayout(PyLayout* self, const std::string& builtin, const std::string& path, const std::string& text,
                const std::string& source, const std::string& profile, int64_t v, std::optional<int64_t> pad) {
  std::optional<engram::Profile> override_profile;
  if (!profile.empty()) {
    override_profile = engram::ParseProfile(profile);
    if (!override_profile) throw engram::Error("profile: '" + profile + "' is neither 'v4.1' nor 'demo-v1' (§CFG.1)");
  }
  engram::EngramConfig config;
  if (builtin == "v4.1") {
    config = engram::V41FlashConfig();
  } else if (builtin == "demo-v1") {
    config = engram::DemoV1Config();
  } else if (!path.empty()) {
    config = engram::LoadConfig(path, override_profile);
  } else {
    config = engram::ParseConfig(nlohmann::json(ParseJson(text, source)), source, override_profile);
  }
  if (v == 0) {
    if (!config.compressed_vocab_size) {
      throw engram::Error(config.source + ": no compressed vocab size: pass compressed_vocab_size (§LAY.4)");
    }
    v = *config.compressed_vocab_size;
  } else if (config.profile == engram::Profile::kV41 && config.compressed_vocab_size &&
             *config.compressed_vocab_size != v) {
    throw engram::Error(config.source + ": key 'engram_compressed_vocab_size': config says " +
                        std::to_string(*config.compressed_vocab_size) + " but compressed_vocab_size is " +
                        std::to_string(v));
  }
  const int64_t p = pad.value_or(config.pad_id);
  if (!pad && (p < 0 || p >= v)) {
    throw engram::Error(config.source + ": pad id " + std::to_string(p) + " is not a compressed id below " +
                        std::to_string(v) + " (without a token map the pad id is used as a compressed id)");
  }
  engram::Layout layout = engram::BuildLayout(config, v, p);
  new (self) PyLayout{std::move(config), std::move(layout), std::nullopt};
  self->fresh.emplace(self->layout);  // points at self->layout, which nanobind never moves
}

size_t RowWidth(const engram::Layout& l) { return l.layers.size() * static_cast<size_t>(l.columns()); }

// An int64 buffer of a numpy array (or anything with the buffer protocol),
// read through PEP 3118 directly: nanobind's ndarray import costs
// microseconds per argument, and a decode step (T = 1) counts them.
class Int64Buffer {
 public:
  Int64Buffer(nb::handle obj, bool writable, const char* what) {
    const int flags = PyBUF_FORMAT | PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj.ptr(), &view_, flags) != 0) {
      PyErr_Clear();
      throw nb::type_error((std::string(what) + ": not a C-contiguous int64 array" + (writable ? " (writable)" : "")).c_str());
    }
    const char* f = view_.format == nullptr ? "B" : view_.format;
    if (*f == '<' || *f == '=' || *f == '@') ++f;
    if (view_.itemsize != 8 || (std::strcmp(f, "l") != 0 && std::strcmp(f, "q") != 0)) {
      PyBuffer_Release(&view_);
      throw nb::type_error((std::string(what) + ": not int64 (format '" + (view_.format ? view_.format : "B") + "')").c_str());
    }
  }
  ~Int64Buffer() { PyBuffer_Release(&view_); }
  Int64Buffer(const Int64Buffer&) = delete;
  Int64Buffer& operator=(const Int64Buffer&) = delete;
  int64_t* data() const { return static_cast<int64_t*>(view_.buf); }
  int ndim() const { return view_.ndim; }
  size_t shape(int i) const { return static_cast<size_t>(view_.shape[i]); }
  size_t size() const { return static_cast<size_t>(view_.len / 8); }

 private:
  Py_buffer view_{};
};

// §HASH.4 rows[n][layers][columns] of the next n ids of `state` (§HASH.6
// AppendInto), into `out` when given (a reused buffer is what a serving
// engine hashes into, and what `engram bench hash` measures), else into a
// new numpy array.
nb::object Append(engram::HashState& state, const engram::Layout& l, nb::handle ids_obj, nb::object out) {
  Int64Buffer ids(ids_obj, false, "ids");
  if (ids.ndim() != 1) throw nb::type_error("ids: not one sequence [T]");
  const size_t n = ids.shape(0), layers = l.layers.size(), cols = static_cast<size_t>(l.columns());
  nb::object result = out;
  if (out.is_none()) {
    // numpy.empty, looked up once.
    static nb::object* empty = new nb::object(nb::module_::import_("numpy").attr("empty"));
    static nb::object* int64 = new nb::object(nb::module_::import_("numpy").attr("int64"));
    result = (*empty)(nb::make_tuple(n, layers, cols), *int64);
  }
  Int64Buffer rows_buf(result, true, "out");
  if (rows_buf.ndim() != 3 || rows_buf.shape(0) != n || rows_buf.shape(1) != layers || rows_buf.shape(2) != cols) {
    std::string got;
    for (int i = 0; i < rows_buf.ndim(); ++i) got += (i ? ", " : "") + std::to_string(rows_buf.shape(i));
    throw engram::Error("out: shape [" + got + "] but " + std::to_string(n) + " ids need [" + std::to_string(n) + ", " +
                        std::to_string(layers) + ", " + std::to_string(cols) + "]");
  }
  std::span<const int64_t> in(ids.data(), n);
  std::span<int64_t> rows(rows_buf.data(), n * layers * cols);
  if (n >= 4096) {
    nb::gil_scoped_release release;  // long sequences: let other Python threads run
    state.AppendInto(in, rows);
  } else {
    state.AppendInto(in, rows);
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

// §FUS.6-§FUS.7 Demo parameters from the dict engram.DemoParams builds.
std::vector<double> Doubles(const nb::dict& d, const char* key) {
  if (!d.contains(key)) throw engram::Error(std::string("params: key '") + key + "' is missing");
  F64In a = nb::cast<F64In>(d[key]);
  return std::vector<double>(a.data(), a.data() + a.size());
}
size_t Size(const nb::dict& d, const char* key) {
  if (!d.contains(key)) throw engram::Error(std::string("params: key '") + key + "' is missing");
  const int64_t v = nb::cast<int64_t>(d[key]);
  if (v < 0) throw engram::Error(std::string("params: key '") + key + "' is negative: " + std::to_string(v));
  return static_cast<size_t>(v);
}
engram::DemoParams ParamsFrom(const nb::dict& d) {
  engram::DemoParams p;
  p.hc = Size(d, "hc");
  p.hidden = Size(d, "hidden");
  p.in = Size(d, "in");
  p.kernel = Size(d, "kernel");
  p.dilation = Size(d, "dilation");
  p.key_w = Doubles(d, "key_w");
  p.key_b = Doubles(d, "key_b");
  p.norm1_w = Doubles(d, "norm1_w");
  p.norm2_w = Doubles(d, "norm2_w");
  p.value_w = Doubles(d, "value_w");
  p.value_b = Doubles(d, "value_b");
  p.conv_norm_w = Doubles(d, "conv_norm_w");
  p.conv_w = Doubles(d, "conv_w");
  p.Check();
  return p;
}

nb::dict GatePartsDict(const engram::GateParts& g) {
  nb::dict d;
  d["clamped"] = g.clamped;
  d["root"] = g.root;
  d["signed_root"] = g.signed_root;
  d["gate"] = g.gate;
  return d;
}

// The header and comments `engram vectors random` writes (cmd_vectors.cc), so
// that random_doc's bytes are that command's file (python/tests check it).
std::string RandomDoc(const std::string& suite, uint64_t seed, int64_t count) {
  const engram::vectors::RandomSuite* gen = engram::vectors::FindRandomSuite(suite);
  if (gen == nullptr) {
    std::string have;
    for (const auto& g : engram::vectors::RandomSuites()) have += (have.empty() ? "" : ", ") + g.suite;
    throw engram::Error("suite " + suite + ": no random generator (those with one: " + have + ")");
  }
  if (count < 1 || count > 1000000) throw engram::Error("n: must be in [1, 1000000], got " + std::to_string(count));
  const std::string origin = " of seed " + std::to_string(seed) + " (" + engram::vectors::kRandomVersion + ", spec " +
                             engram::vectors::kSpecVersion + ")";
  std::vector<engram::vectors::RandomCase> cases;
  std::vector<std::string> comments;
  {
    nb::gil_scoped_release release;
    engram::vectors::CaseStream stream(*gen, seed, count, 1);
    engram::vectors::RandomCase c;
    while (stream.Next(c)) {
      comments.push_back("random case " + std::to_string(cases.size() + 1) + origin);
      cases.push_back(c);
    }
  }
  const ojson doc = engram::vectors::RandomCasesDoc(
      *gen, cases, comments,
      {"Random cases 1 ... " + std::to_string(count) + origin + " (spec/conformance.md §CONF.7), as engram conform "
       "--random " + std::to_string(count) + " --seed " + std::to_string(seed) + " asks them; tcId = case number.",
       "Generated by: engram vectors random --count " + std::to_string(count) + " --seed " + std::to_string(seed)});
  return engram::vectors::Serialize(doc);
}

// §CONF.7 Case `index` (1-based) of `suite` under `seed` alone, as a vector
// document of one test whose tcId is `index`: what engram conform --random
// sends as that case, drawn when a test needs it (the pytest plugin).
std::string RandomCaseDoc(const std::string& suite, uint64_t seed, int64_t index) {
  const engram::vectors::RandomSuite* gen = engram::vectors::FindRandomSuite(suite);
  if (gen == nullptr) throw engram::Error("suite " + suite + ": no random generator");
  if (index < 1) throw engram::Error("index: must be >= 1, got " + std::to_string(index));
  engram::vectors::RandomCase c;
  {
    nb::gil_scoped_release release;
    c = engram::vectors::DrawCase(*gen, seed, index - 1);
  }
  const std::string origin = " of seed " + std::to_string(seed) + " (" + engram::vectors::kRandomVersion + ", spec " +
                             engram::vectors::kSpecVersion + ")";
  ojson doc = engram::vectors::RandomCasesDoc(*gen, {c}, {"random case " + std::to_string(index) + origin},
                                              {"Random case " + std::to_string(index) + origin + " (spec/conformance.md §CONF.7)."});
  doc["testGroups"][0]["tests"][0]["tcId"] = index;
  return engram::vectors::Serialize(doc);
}

// §CONF.7 The types of cases 1 ... n of `suite` under `seed`, each case drawn
// and dropped (the pytest plugin keeps a type per case, not the case).
std::vector<std::string> RandomTypes(const std::string& suite, uint64_t seed, int64_t n) {
  const engram::vectors::RandomSuite* gen = engram::vectors::FindRandomSuite(suite);
  if (gen == nullptr) throw engram::Error("suite " + suite + ": no random generator");
  std::vector<std::string> types;
  nb::gil_scoped_release release;
  engram::vectors::CaseStream stream(*gen, seed, n, engram::vectors::DefaultCaseThreads());
  engram::vectors::RandomCase c;
  while (stream.Next(c)) types.push_back(c.type);
  return types;
}

// §CONF.4 The run-level and suite-level problems of a pytest session, decided
// by engram conform's rule (report.cc DecideScope) from every case's outcome:
// [(label, status, reason, valid, trivial), ...]; `random` is
// --engram-random N.
std::vector<std::string> SessionProblems(const std::vector<std::tuple<std::string, std::string, std::string, bool, bool>>& outcomes,
                                         int64_t random) {
  engram::conform::Verdict v;
  engram::conform::Scope scope;
  scope.random_cases = random;
  std::set<std::string> fixed;
  for (const auto& [label, status, reason, valid, trivial] : outcomes) {
    engram::conform::TestResult r;
    r.suite = label;
    r.status = status;
    r.reason = reason;
    r.valid = valid;
    r.trivial = trivial;
    v.suites[label].Add(r);
    if (label.rfind("random:", 0) == 0) {
      ++scope.random_asked;
    } else {
      fixed.insert(label);
    }
  }
  for (const auto& [label, c] : v.suites) v.total.Merge(c);
  v.tested = v.total.tested;
  v.trivial = v.total.trivial;
  scope.vector_suites.assign(fixed.begin(), fixed.end());
  if (scope.random_asked == 0) scope.random_cases = 0;  // --engram-random N with no random test collected: not a run of them
  engram::conform::DecideScope(scope, v);
  std::vector<std::string> out = v.problems;
  for (const auto& [label, list] : v.suite_problems) {
    for (const std::string& p : list) out.push_back(label + ": " + p);
  }
  return out;
}

// The environment as the shard rules read it.
std::function<std::optional<std::string>(const char*)> EnvOf(const std::map<std::string, std::string>& env) {
  return [env](const char* name) -> std::optional<std::string> {
    const auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "The Engram reference in-process (nanobind bindings of the C++ reference; see engram/__init__.py)";
  nb::exception<engram::Error>(m, "Error", PyExc_ValueError);
  m.attr("SPEC_VERSION") = engram::vectors::kSpecVersion;
  m.attr("RANDOM_VERSION") = engram::vectors::kRandomVersion;
  m.attr("VERSION") = ENGRAM_VERSION;

  nb::class_<PyLayout>(m, "Layout")
      .def("__init__", &InitLayout, "builtin"_a, "path"_a, "text"_a, "source"_a, "profile"_a,
           "compressed_vocab_size"_a, "compressed_pad"_a.none())
      .def_prop_ro("profile", [](const PyLayout& l) { return std::string(engram::ProfileName(l.layout.profile)); })
      .def_prop_ro("compressed_vocab_size", [](const PyLayout& l) { return l.layout.compressed_vocab_size; })
      .def_prop_ro("compressed_pad", [](const PyLayout& l) { return l.layout.pad; })
      .def_prop_ro("max_ngram", [](const PyLayout& l) { return l.layout.max_ngram; })
      .def_prop_ro("heads", [](const PyLayout& l) { return l.layout.heads; })
      .def_prop_ro("columns", [](const PyLayout& l) { return l.layout.columns(); })
      .def_prop_ro("layer_ids", [](const PyLayout& l) {
        std::vector<int64_t> v;
        for (const auto& x : l.layout.layers) v.push_back(x.layer_id);
        return v;
      })
      .def_prop_ro("multipliers", [](const PyLayout& l) {
        std::vector<std::vector<int64_t>> v;
        for (const auto& x : l.layout.layers) v.push_back(x.multipliers);
        return v;
      })
      .def_prop_ro("primes", [](const PyLayout& l) {
        std::vector<std::vector<std::vector<int64_t>>> v;
        for (const auto& x : l.layout.layers) v.push_back(x.primes);
        return v;
      })
      .def_prop_ro("offsets", [](const PyLayout& l) {
        std::vector<std::vector<int64_t>> v;
        for (const auto& x : l.layout.layers) v.push_back(x.offsets);
        return v;
      })
      .def_prop_ro("num_embeddings", [](const PyLayout& l) {
        std::vector<int64_t> v;
        for (const auto& x : l.layout.layers) v.push_back(x.num_embeddings);
        return v;
      })
      .def_prop_ro("fingerprint", [](const PyLayout& l) { return engram::LayoutFingerprint(l.layout); });

  m.def("hash", [](const PyLayout& l, nb::handle ids, nb::object out) {
    engram::HashState state = *l.fresh;
    return Append(state, l.layout, ids, out);
  }, "layout"_a, "ids"_a, "out"_a = nb::none());
  m.def("trace_json", [](const PyLayout& l, I64In ids) {
    const auto traces = engram::TraceSequence(l.layout, std::span<const int64_t>(ids.data(), ids.shape(0)));
    ojson out = ojson::array();
    for (const auto& t : traces) out.push_back(TraceJson(t));
    return out.dump();
  });

  nb::class_<PyHashState>(m, "HashState")
      .def("__init__",
           [](PyHashState* self, const PyLayout& l, size_t capacity) {
             new (self) PyHashState{&l, engram::HashState(l.layout, capacity)};
           },
           "layout"_a, "rollback_capacity"_a = 0, nb::keep_alive<1, 2>())
      .def("append",
           [](PyHashState& s, nb::handle ids, nb::object out) { return Append(s.state, s.layout->layout, ids, out); },
           "ids"_a, "out"_a = nb::none())
      .def("rollback", [](PyHashState& s, size_t k) { s.state.Rollback(k); }, "k"_a)
      .def("fork", [](const PyHashState& s) { return PyHashState(s); }, nb::keep_alive<0, 1>())
      .def_prop_ro("position", [](const PyHashState& s) { return s.state.position(); })
      .def_prop_ro("rollback_capacity", [](const PyHashState& s) { return s.state.rollback_capacity(); })
      .def("history", [](const PyHashState& s) { return s.state.History(); })
      .def("export_json", [](const PyHashState& s) { return engram::HistoryToJson(s.state.Export()).dump(); })
      .def_static(
          "import_json",
          [](const PyLayout& l, const std::string& text, size_t capacity) {
            const engram::HashHistory h = engram::HistoryFromJson(nlohmann::json(ParseJson(text, "history")), "history");
            return PyHashState{&l, engram::HashState::Import(l.layout, h, capacity)};
          },
          "layout"_a, "history"_a, "rollback_capacity"_a = 0, nb::keep_alive<0, 1>());

  m.def("build_token_map", [](const std::string& text, const std::string& source) {
    const engram::Tokenizer tok = engram::ParseTokenizerJson(text, source);
    const engram::TokenMap map = engram::BuildTokenMap(tok);
    return std::make_pair(FromVector<int64_t>(map.map, {map.map.size()}), map.compressed_size);
  });

  m.def("decode_rows", [](U8In codes, U8In scales) {
    if (codes.ndim() == 0) throw engram::Error("codes: a scalar; expected an array [..., head_dim]");
    const size_t d = codes.shape(codes.ndim() - 1);
    if (d % engram::kScaleBlock != 0) {
      throw engram::Error("codes: the last dimension is " + std::to_string(d) + ", not a multiple of 32 (§STO.3)");
    }
    if (scales.size() * engram::kScaleBlock != codes.size()) {
      throw engram::Error("scales: holds " + std::to_string(scales.size()) + " values but " + std::to_string(codes.size()) +
                          " codes need " + std::to_string(codes.size() / engram::kScaleBlock) + " (one per 32, §STO.3)");
    }
    std::vector<size_t> shape;
    for (size_t i = 0; i < codes.ndim(); ++i) shape.push_back(codes.shape(i));
    auto out = Owned<uint16_t>(shape);
    for (size_t i = 0; i < codes.size(); ++i) {
      out.data()[i] = engram::DecodeElement(codes.data()[i], scales.data()[i / engram::kScaleBlock]);
    }
    return out;
  });
  m.def("decode_e4m3", &engram::DecodeE4M3, "code"_a);
  m.def("decode_e8m0", &engram::DecodeE8M0, "scale"_a);
  m.def("decode_element", &engram::DecodeElement, "code"_a, "scale"_a);

  m.def("row_shard", [](int64_t rows, int rank, int world) {
    const engram::Shard s = engram::RowShard(rows, rank, world);
    return std::make_pair(s.begin, s.end);
  }, "rows"_a, "rank"_a, "world"_a);
  m.def("head_shard", [](int columns, int rank, int world) {
    const engram::HeadRange s = engram::HeadShard(columns, rank, world);
    return std::make_pair(s.begin, s.end);
  }, "columns"_a, "rank"_a, "world"_a);
  m.def("owner_rank", &engram::OwnerRank, "rows"_a, "world"_a, "row"_a);

  m.def("gate_v41", [](double dot, const std::string& p) { return GatePartsDict(engram::GateV41(dot, ParsePrecision(p))); },
        "dot"_a, "precision"_a);
  m.def("gate_demo", [](double g, const std::string& p) { return GatePartsDict(engram::GateDemo(g, ParsePrecision(p))); },
        "g"_a, "precision"_a);
  m.def("fuse_v41_stream",
        [](U16In h, U16In key, U16In value, U16In qw, U16In kw, double eps, bool masked, const std::string& p) {
          auto sp = [](const U16In& a) { return std::span<const uint16_t>(a.data(), a.shape(0)); };
          const engram::V41StreamTrace t =
              engram::FuseV41Stream(sp(h), sp(key), sp(value), sp(qw), sp(kw), eps, masked, ParsePrecision(p));
          nb::dict d;
          d["dot"] = t.dot;
          d["gate"] = t.gate;
          d["gate_parts"] = GatePartsDict(t.gate_parts);
          d["rstd"] = t.rstd;
          d["out"] = FromVector<double>(t.out, {t.out.size()});
          d["out_bf16"] = FromVector<uint16_t>(t.out_bf16, {t.out_bf16.size()});
          return d;
        },
        "h"_a, "key"_a, "value"_a, "q_weight"_a, "k_weight"_a, "eps"_a, "masked"_a, "precision"_a);
  m.def("short_conv", [](F64In value, size_t steps, const nb::dict& params, const std::string& p) {
    const engram::DemoParams q = ParamsFrom(params);
    const engram::ShortConvTrace t =
        engram::ShortConv(std::span<const double>(value.data(), value.size()), steps, q, ParsePrecision(p));
    const size_t width = q.hc * q.hidden;
    nb::dict d;
    d["normed"] = FromVector<double>(t.normed, {steps, width});
    d["conv"] = FromVector<double>(t.conv, {steps, width});
    d["act"] = FromVector<double>(t.act, {steps, width});
    return d;
  }, "value"_a, "steps"_a, "params"_a, "precision"_a);
  m.def("demo_forward", [](F64In e, F64In hidden, size_t steps, const nb::dict& params, const std::string& p) {
    const engram::DemoParams q = ParamsFrom(params);
    const engram::DemoForwardTrace t = engram::DemoForward(std::span<const double>(e.data(), e.size()),
                                                           std::span<const double>(hidden.data(), hidden.size()), steps,
                                                           q, ParsePrecision(p));
    std::vector<double> gates;
    for (const auto& tok : t.tokens) {
      for (const auto& s : tok.streams) gates.push_back(s.gate);
    }
    nb::dict d;
    d["gates"] = FromVector<double>(gates, {steps, q.hc});
    d["value"] = FromVector<double>(t.value, {steps, q.hc, q.hidden});
    d["conv"] = FromVector<double>(t.conv.act, {steps, q.hc, q.hidden});
    d["output"] = FromVector<double>(t.output, {steps, q.hc, q.hidden});
    d["hidden_after"] = FromVector<double>(t.hidden_after, {steps, q.hc, q.hidden});
    return d;
  }, "e"_a, "hidden"_a, "steps"_a, "params"_a, "precision"_a);

  // §CONF.1 What a port is sent (inputs) and what it must produce (expected).
  m.def("split", [](const std::string& type, const std::string& test) {
    const engram::conform::SplitTest s = engram::conform::SplitOrdered(type, ParseJson(test, "test"));
    return std::make_pair(s.inputs.dump(), s.expected.dump());
  }, "type"_a, "test"_a);
  // §CONF.4 The runner's verdict on one answer: the same Judge `engram conform` calls.
  m.def("judge", [](const std::string& suite, const std::string& group_text, const std::string& test_text,
                    const std::string& reply_text, const std::string& notes_text) {
    ojson group = ParseJson(group_text, "group");
    group.erase("tests");
    const ojson test = ParseJson(test_text, "test");
    const std::string type = group.value("type", "");
    engram::conform::TestResult r = engram::conform::NewResult(suite, test);
    r.trivial = r.valid && engram::vectors::IsTrivial(group, test);
    engram::conform::Peer::Reply reply;
    reply.body = ParseJson(reply_text, "answer");
    engram::conform::Judge(r, type, group, test, engram::conform::SplitOrdered(type, test), reply);
    engram::conform::AddFlags(r, ParseJson(notes_text, "notes"));
    return std::make_tuple(r.status, r.reason, r.detail, r.trivial);
  }, "suite"_a, "group"_a, "test"_a, "answer"_a, "notes"_a);

  m.def("random_suites", [] {
    std::vector<std::string> v;
    for (const auto& g : engram::vectors::RandomSuites()) v.push_back(g.suite);
    return v;
  });
  m.def("random_doc", &RandomDoc, "suite"_a, "seed"_a, "n"_a);
  m.def("serialize", [](const std::string& doc) { return engram::vectors::Serialize(ParseJson(doc, "document")); });
  m.def("write_vectors_dir", [](const std::string& out, const std::vector<std::pair<std::string, std::string>>& docs,
                                const std::string& schema_dir) {
    std::vector<std::string> names;
    for (const auto& [name, text] : docs) names.push_back(name);
    std::ostringstream log;
    engram::vectors::WriteVectorsDir(
        out, names,
        [&](const std::string& name) {
          for (const auto& [n, text] : docs) {
            if (n == name) return ParseJson(text, name);
          }
          return ojson();
        },
        schema_dir, log);
    return log.str();
  }, "out"_a, "docs"_a, "schema_dir"_a);
  m.def("released_set", &engram::vectors::ReleasedSet, "manifest_sha256"_a);
  m.def("vectors_kind", [](const std::string& sha) { return engram::vectors::ClassifySet(sha).Describe(); },
        "manifest_sha256"_a);

  // §CONF.4 The vectors as engram conform checks them before a run: (manifest
  // digest, released set or None, {suite: document text}).
  // `suites`: those checked against their schemas and returned (empty: none;
  // every file is digest-checked and parsed either way).
  m.def("check_vectors", [](const std::string& dir, const std::vector<std::string>& suites) {
    engram::conform::CheckedVectors v;
    {
      nb::gil_scoped_release release;
      // LoadVectors judges every suite for an empty set: a name no suite has judges none.
      std::set<std::string> judged(suites.begin(), suites.end());
      if (judged.empty()) judged.insert("");
      v = engram::conform::CheckVectorsDirectory(dir, judged);
    }
    std::map<std::string, std::string> texts;
    std::vector<std::string> names;
    for (const auto& [name, doc] : v.suites) {
      names.push_back(name);
      if (std::find(suites.begin(), suites.end(), name) != suites.end()) texts[name] = doc.dump();
    }
    return std::make_tuple(v.manifest_sha256, v.released, names, texts);
  }, "dir"_a, "suites"_a);
  // §CONF.9 The shard of `engram conform`, from the same rules (shard.cc):
  // the options (as text, or None), else the environment given.
  m.def("choose_shard", [](std::optional<std::string> index, std::optional<std::string> count,
                           const std::map<std::string, std::string>& env) {
    std::optional<int64_t> i, n;
    if (index) i = engram::conform::ShardNumber("--engram-shard-index", *index);
    if (count) n = engram::conform::ShardNumber("--engram-shard-count", *count);
    const engram::conform::Shard s = engram::conform::ChooseShard(i, n, EnvOf(env));
    return std::make_tuple(s.index, s.count, s.source);
  }, "index"_a.none(), "count"_a.none(), "env"_a);
  m.def("touch_shard_status_file", [](const std::map<std::string, std::string>& env) {
    engram::conform::TouchShardStatusFile(EnvOf(env));
  }, "env"_a);
  m.def("decimal_in", &engram::conform::DecimalIn, "name"_a, "value"_a, "lo"_a, "hi"_a);
  m.def("check_save_failures", [](const std::string& dir) { engram::conform::CheckSaveFailures(dir); }, "dir"_a);
  m.def("random_case_doc", &RandomCaseDoc, "suite"_a, "seed"_a, "index"_a);
  m.def("random_types", &RandomTypes, "suite"_a, "seed"_a, "n"_a);
  m.def("session_problems", &SessionProblems, "outcomes"_a, "random"_a);
}
