// engram_conformance._core — the nanobind bindings behind the Python module `engram_conformance`
// (docs/python.md). Every value computed here comes from the libraries the
// CLI links: engram::reference (one file per spec section), engram::vectors
// (the generators of §VEC and §CONF.7), the runner's judge
// (conformance/runner/judge.cc, §CONF.4) and the CLI's commands themselves
// (python -m engram_conformance). Nothing is re-implemented: a port tested in-process is
// judged by the same code as `engram conform`. Every argument is checked by
// the rules of args.h (the CLI's) before the reference sees it.
//
// JSON crosses the boundary as text (Python's json keeps key order, and
// §CONF.4 compares in the vector file's key order); arrays cross as numpy
// buffers.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "conformance/cli/common.h"
#include "conformance/runner/judge.h"
#include "conformance/runner/random_run.h"
#include "conformance/runner/report.h"
#include "conformance/runner/runner.h"
#include "conformance/runner/shard.h"
#include "python/src/args.h"
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
using engram::py::Int;
using engram::py::IntRule;

namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// The CLI's caps (conformance/cli/cmd_lookup.cc, cmd_vectors.cc, common.h), and the bounds a
// configuration allows (reference/config.cc: heads <= 4096, max n-gram <= 64).
const IntRule kWorld{1, engram::cli::kMaxWorld, engram::cli::kWorldWhy};
const IntRule kRows{0, int64_t{1} << 62, "a table's row count; at most 2^62, so that rank * part stays an int64"};
const IntRule kColumns{1, 63 * 4096, "(max n-gram - 1) * heads, at most 63 * 4096 (§CFG)"};
const IntRule kVocab{1, engram::cli::kMaxCompressedVocabSize,
                     "the size of a token map, whose compressed ids are < 2^31, §TOK.5"};
const IntRule kPad{0, engram::cli::kMaxCompressedVocabSize - 1, "a compressed id, below compressed_vocab_size, §TOK.5"};
const IntRule kCount{0, kInt64Max, "a number of ids"};
const IntRule kSeed{0, kInt64Max, "a seed, as engram vectors random --seed"};
const IntRule kCases{1, 1000000, "a number of cases, as engram vectors random --count"};
const IntRule kByte{0, 255, "one byte, §STO.1-§STO.2"};
const IntRule kDemoSize{1, kInt64Max, "a demo-v1 size"};

// A rank below `world`.
IntRule RankRule(int64_t world) { return {0, world - 1, "ranks are 0 ... world - 1"}; }

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

engram::Precision ParsePrecision(nb::handle v) {
  const std::string p = engram::py::Str(v, "precision", "'float64' or 'float32'");
  if (p == "float64") return engram::Precision::kFloat64;
  if (p == "float32") return engram::Precision::kFloat32;
  throw engram::Error("precision: '" + p + "' is neither 'float64' (the reference, §FUS.8) nor 'float32' (the mirror)");
}

// A dict or list as JSON text (Python's json keeps key order, which §CONF.4 compares in).
std::string JsonText(nb::handle v) { return nb::cast<std::string>(nb::module_::import_("json").attr("dumps")(v)); }

// The configuration and layout of engram.Layout (§CFG, §LAY).
struct PyLayout {
  engram::EngramConfig config;
  engram::Layout layout;
  // A state at position 0, copied by hash(): cheaper than building one per
  // call (its per-column division-free moduli), which a T = 1 call would
  // otherwise spend most of its time on.
  std::optional<engram::HashState> fresh;
};

// §CFG, §LAY.4, §TOK.5: the configuration (a shipped one by name, a config.json path, or a
// dict of its keys), V and the compressed pad as `engram layout` resolves them without a token
// map (conformance/cli/common.cc Load), or as a vector group gives them.
void InitLayout(PyLayout* self, nb::handle config_arg, nb::handle v_arg, nb::handle pad_arg, nb::handle profile_arg) {
  std::optional<engram::Profile> override_profile;
  std::string profile;
  if (!profile_arg.is_none()) {
    profile = engram::py::Str(profile_arg, "profile", "'v4.1' or 'demo-v1'");
    override_profile = engram::ParseProfile(profile);
    if (!override_profile) throw engram::Error("profile: '" + profile + "' is neither 'v4.1' nor 'demo-v1' (§CFG.1)");
  }
  const std::optional<int64_t> v_given = engram::py::OptionalInt(v_arg, "compressed_vocab_size", kVocab);
  const std::optional<int64_t> pad = engram::py::OptionalInt(pad_arg, "compressed_pad", kPad);
  engram::EngramConfig config;
  PyObject* c = config_arg.ptr();
  if (PyUnicode_Check(c) && (nb::cast<std::string>(config_arg) == "v4.1" || nb::cast<std::string>(config_arg) == "demo-v1")) {
    const std::string builtin = nb::cast<std::string>(config_arg);
    config = builtin == "v4.1" ? engram::V41FlashConfig() : engram::DemoV1Config();
    // A profile overrides what a file's keys say (§CFG.1); a shipped configuration has one.
    if (override_profile && *override_profile != config.profile) {
      throw engram::Error("profile: '" + profile + "' contradicts the shipped configuration '" + builtin +
                          "' (a profile overrides what a config file's keys say, §CFG.1; pass a path or a dict)");
    }
  } else if (PyUnicode_Check(c) || PyObject_HasAttrString(c, "__fspath__")) {
    nb::object path = nb::module_::import_("os").attr("fsdecode")(config_arg);
    config = engram::LoadConfig(nb::cast<std::string>(path), override_profile);
  } else if (PyDict_Check(c) || PyObject_HasAttrString(c, "keys")) {
    const std::string text = JsonText(nb::module_::import_("builtins").attr("dict")(config_arg));
    config = engram::ParseConfig(nlohmann::json(ParseJson(text, "config")), "config", override_profile);
  } else {
    throw nb::type_error(("config: must be a config.json path, a dict of its keys, or 'v4.1' / 'demo-v1', got " +
                          nb::cast<std::string>(nb::repr(config_arg)).substr(0, 60) + " (a " +
                          Py_TYPE(c)->tp_name + ")")
                             .c_str());
  }
  int64_t v = 0;
  if (!v_given) {
    if (!config.compressed_vocab_size) {
      throw engram::Error(config.source + ": no compressed vocab size: pass compressed_vocab_size (§LAY.4)");
    }
    v = *config.compressed_vocab_size;
  } else {
    v = *v_given;
    if (config.profile == engram::Profile::kV41 && config.compressed_vocab_size && *config.compressed_vocab_size != v) {
      throw engram::Error(config.source + ": key 'engram_compressed_vocab_size': config says " +
                          std::to_string(*config.compressed_vocab_size) + " but compressed_vocab_size is " +
                          std::to_string(v));
    }
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

// A layout argument (an engram.Layout), with a TypeError in the module's words otherwise.
const PyLayout& LayoutArg(nb::handle v) {
  if (!nb::isinstance<PyLayout>(v)) {
    throw nb::type_error(("layout: must be an engram.Layout, got a " + std::string(Py_TYPE(v.ptr())->tp_name)).c_str());
  }
  return nb::cast<const PyLayout&>(v);
}

// The ids argument: a C-contiguous int64 numpy array read in place (a decode
// step, T = 1, counts its microseconds), anything else through the element
// rules (args.h).
class Ids {
 public:
  explicit Ids(nb::handle v) {
    if (engram::py::IsNdarray(v) &&
        PyObject_GetBuffer(v.ptr(), &view_, PyBUF_FORMAT | PyBUF_ND | PyBUF_C_CONTIGUOUS) == 0) {
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
    array_ = engram::py::Int64Array(v, "ids");
    if (array_.ndim() != 1) {
      throw engram::Error("ids: shape " + engram::py::ShapeText(array_.shape) + "; expected one sequence [T] (§HASH.4)");
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
  engram::py::Array<int64_t> array_;
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
  const engram::py::OutInt64 rows_buf(result, "out");
  if (!rows_buf.Is(n, layers, cols)) {
    throw engram::Error("out: shape " + engram::py::ShapeText(rows_buf.shape()) + " but " + std::to_string(n) +
                        " ids need " + engram::py::ShapeText({n, layers, cols}));
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

// §FUS.5-§FUS.7 Demo parameters from a mapping of their names (engram.DemoParams).
const char* const kDemoSizes[] = {"hc", "hidden", "in", "kernel", "dilation"};
const char* const kDemoArrays[] = {"key_w", "key_b", "norm1_w", "norm2_w", "value_w", "value_b", "conv_norm_w", "conv_w"};

nb::handle Need(const nb::dict& d, const char* key) {
  if (!d.contains(key)) throw engram::Error(std::string("params: key '") + key + "' is missing");
  return d[key];
}
// `check`: also DemoParams::Check (every array of its sizes' product, the products in 64 bits, §ERR.3), which
// engram.DemoParams leaves to the functions that use the parameters.
engram::DemoParams ParamsFrom(nb::handle mapping, bool check = true) {
  if (!PyDict_Check(mapping.ptr())) {
    throw nb::type_error(("params: must be a dict (engram.DemoParams(...)), got a " +
                          std::string(Py_TYPE(mapping.ptr())->tp_name))
                             .c_str());
  }
  const nb::dict d = nb::borrow<nb::dict>(mapping);
  for (auto [key, value] : d) {
    const std::string k = nb::cast<std::string>(nb::str(key));
    const bool known = std::find(std::begin(kDemoSizes), std::end(kDemoSizes), k) != std::end(kDemoSizes) ||
                       std::find(std::begin(kDemoArrays), std::end(kDemoArrays), k) != std::end(kDemoArrays);
    if (!known) {
      throw engram::Error("params: unknown key '" + k +
                          "' (sizes hc, hidden, in, kernel, dilation; arrays key_w, key_b, norm1_w, norm2_w, value_w, "
                          "value_b, conv_norm_w, conv_w)");
    }
  }
  auto size = [&](const char* key) {
    return static_cast<size_t>(Int(Need(d, key), (std::string("params: ") + key).c_str(), kDemoSize));
  };
  auto values = [&](const char* key) {
    const engram::py::Array<double> a = engram::py::RealArray(Need(d, key), (std::string("params: ") + key).c_str());
    return std::vector<double>(a.data.begin(), a.data.end());
  };
  engram::DemoParams p;
  p.hc = size("hc");
  p.hidden = size("hidden");
  p.in = size("in");
  p.kernel = size("kernel");
  p.dilation = size("dilation");
  p.key_w = values("key_w");
  p.key_b = values("key_b");
  p.norm1_w = values("norm1_w");
  p.norm2_w = values("norm2_w");
  p.value_w = values("value_w");
  p.value_b = values("value_b");
  p.conv_norm_w = values("conv_norm_w");
  p.conv_w = values("conv_w");
  if (check) p.Check();
  return p;
}

// The parameters as engram.DemoParams returns them: sizes as ints, arrays as flat float64 numpy arrays.
nb::dict ParamsDict(const engram::DemoParams& p) {
  nb::dict d;
  d["hc"] = p.hc;
  d["hidden"] = p.hidden;
  d["in"] = p.in;
  d["kernel"] = p.kernel;
  d["dilation"] = p.dilation;
  const std::pair<const char*, const std::vector<double>*> arrays[] = {
      {"key_w", &p.key_w},     {"key_b", &p.key_b},     {"norm1_w", &p.norm1_w},         {"norm2_w", &p.norm2_w},
      {"value_w", &p.value_w}, {"value_b", &p.value_b}, {"conv_norm_w", &p.conv_norm_w}, {"conv_w", &p.conv_w}};
  for (const auto& [key, values] : arrays) d[key] = FromVector<double>(*values, {values->size()});
  return d;
}

nb::dict GatePartsDict(const engram::GateParts& g) {
  nb::dict d;
  d["clamped"] = g.clamped;
  d["root"] = g.root;
  d["signed_root"] = g.signed_root;
  d["gate"] = g.gate;
  return d;
}

const engram::vectors::RandomSuite& RandomGenerator(const std::string& suite) {
  const engram::vectors::RandomSuite* gen = engram::vectors::FindRandomSuite(suite);
  if (gen == nullptr) {
    std::string have;
    for (const auto& g : engram::vectors::RandomSuites()) have += (have.empty() ? "" : ", ") + g.suite;
    throw engram::Error("suite " + suite + ": no random generator (those with one: " + have + ")");
  }
  return *gen;
}

std::string Origin(uint64_t seed) {
  return " of seed " + std::to_string(seed) + " (" + engram::vectors::kRandomVersion + ", spec " +
         engram::vectors::kSpecVersion + ")";
}

// The header and comments `engram vectors random` writes (cmd_vectors.cc), so
// that random_doc's bytes are that command's file (python/tests check it).
std::string RandomDoc(const std::string& suite, uint64_t seed, int64_t count) {
  const engram::vectors::RandomSuite& gen = RandomGenerator(suite);
  const std::string origin = Origin(seed);
  std::vector<engram::vectors::RandomCase> cases;
  std::vector<std::string> comments;
  {
    nb::gil_scoped_release release;
    engram::vectors::CaseStream stream(gen, seed, count, 1);
    engram::vectors::RandomCase c;
    while (stream.Next(c)) {
      comments.push_back("random case " + std::to_string(cases.size() + 1) + origin);
      cases.push_back(c);
    }
  }
  const ojson doc = engram::vectors::RandomCasesDoc(
      gen, cases, comments,
      {"Random cases 1 ... " + std::to_string(count) + origin + " (spec/conformance.md §CONF.7), as engram conform "
       "--random " + std::to_string(count) + " --seed " + std::to_string(seed) + " asks them; tcId = case number.",
       "Generated by: engram vectors random --count " + std::to_string(count) + " --seed " + std::to_string(seed)});
  return engram::vectors::Serialize(doc);
}

// §CONF.7 The numbers (1-based) of the first `count` cases of `type` in the stream of `suite` under `seed`,
// looking at most `max_draws` cases; the cases are not kept (the pytest plugin draws each when its test runs).
std::vector<int64_t> RandomNumbers(const std::string& suite, uint64_t seed, int64_t count, const std::string& type,
                                   int64_t max_draws) {
  const engram::vectors::RandomSuite& gen = RandomGenerator(suite);
  std::vector<int64_t> numbers;
  nb::gil_scoped_release release;
  for (int64_t i = 0; i < max_draws && static_cast<int64_t>(numbers.size()) < count; ++i) {
    const ojson recipe = gen.draw(seed, i);
    if (recipe.is_object() && recipe.contains("type")) {
      if (recipe["type"] == type) numbers.push_back(i + 1);
      continue;
    }
    if (engram::vectors::DrawCase(gen, seed, i).type == type) numbers.push_back(i + 1);
  }
  return numbers;
}

// §CONF.7 The first `count` cases of `type` in the stream of `suite` under `seed` (the stream
// `engram conform --random` draws from), looking at most `max_draws` cases: the document, and
// each case's number in the stream (1-based, the number conform --random gives it). A recipe
// that names another type is passed over without building its case.
std::pair<std::string, std::vector<int64_t>> RandomTyped(const std::string& suite, uint64_t seed, int64_t count,
                                                         const std::string& type, int64_t max_draws) {
  const engram::vectors::RandomSuite& gen = RandomGenerator(suite);
  const std::string origin = Origin(seed);
  std::vector<engram::vectors::RandomCase> cases;
  std::vector<std::string> comments;
  std::vector<int64_t> numbers;
  {
    nb::gil_scoped_release release;
    for (int64_t i = 0; i < max_draws && static_cast<int64_t>(cases.size()) < count; ++i) {
      const ojson recipe = gen.draw(seed, i);
      if (recipe.is_object() && recipe.contains("type") && recipe["type"] != type) continue;
      engram::vectors::RandomCase c = engram::vectors::DrawCase(gen, seed, i);
      if (c.type != type) continue;
      comments.push_back("random case " + std::to_string(i + 1) + origin);
      numbers.push_back(i + 1);
      cases.push_back(std::move(c));
    }
  }
  const ojson doc = engram::vectors::RandomCasesDoc(
      gen, cases, comments,
      {"The first " + std::to_string(count) + " random cases of type " + type + origin +
       " (spec/conformance.md §CONF.7) among at most " + std::to_string(max_draws) +
       " drawn; each comment names the case's number, which engram conform --random asks it as."});
  return {engram::vectors::Serialize(doc), numbers};
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
      .def("__init__", &InitLayout, "config"_a.none(), "compressed_vocab_size"_a.none() = nb::none(),
           "compressed_pad"_a.none() = nb::none(), "profile"_a.none() = nb::none())
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

  m.def("hash", [](nb::handle layout, nb::handle ids, nb::object out) {
    const PyLayout& l = LayoutArg(layout);
    engram::HashState state = *l.fresh;
    return Append(state, l.layout, ids, out);
  }, "layout"_a.none(), "ids"_a.none(), "out"_a.none() = nb::none());
  // §HASH.2-§HASH.4 the intermediates of every position, or of `position` (one of the T).
  m.def("trace_json", [](nb::handle layout, nb::handle ids_obj, nb::handle position) {
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
  }, "layout"_a.none(), "ids"_a.none(), "position"_a.none() = nb::none());

  nb::class_<PyHashState>(m, "HashState")
      .def("__init__",
           [](PyHashState* self, nb::handle layout, nb::handle capacity) {
             const PyLayout& l = LayoutArg(layout);
             const auto c = static_cast<size_t>(Int(capacity, "rollback_capacity", kCount));
             new (self) PyHashState{&l, engram::HashState(l.layout, c)};
           },
           "layout"_a.none(), "rollback_capacity"_a.none() = 0, nb::keep_alive<1, 2>())
      .def("append",
           [](PyHashState& s, nb::handle ids, nb::object out) { return Append(s.state, s.layout->layout, ids, out); },
           "ids"_a.none(), "out"_a.none() = nb::none())
      .def("rollback", [](PyHashState& s, nb::handle k) { s.state.Rollback(static_cast<size_t>(Int(k, "k", kCount))); },
           "k"_a.none())
      .def("fork", [](const PyHashState& s) { return PyHashState(s); }, nb::keep_alive<0, 1>())
      .def_prop_ro("position", [](const PyHashState& s) { return s.state.position(); })
      .def_prop_ro("rollback_capacity", [](const PyHashState& s) { return s.state.rollback_capacity(); })
      .def("history", [](const PyHashState& s) { return s.state.History(); })
      .def("export_json", [](const PyHashState& s) { return engram::HistoryToJson(s.state.Export()).dump(); })
      .def_static(
          "import_json",
          [](nb::handle layout, nb::handle history, nb::handle capacity) {
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
          },
          "layout"_a.none(), "history"_a.none(), "rollback_capacity"_a.none() = 0, nb::keep_alive<0, 1>());

  // §TOK.1-§TOK.4 A tokenizer.json given as a path or as its JSON text.
  m.def("build_token_map", [](nb::handle tokenizer) {
    engram::Tokenizer tok;
    std::string source;
    const bool text = PyUnicode_Check(tokenizer.ptr());
    const std::string s = text ? nb::cast<std::string>(tokenizer) : std::string();
    const size_t first = s.find_first_not_of(" \t\r\n");
    if (text && first != std::string::npos && s[first] == '{') {
      source = "tokenizer.json";
      tok = engram::ParseTokenizerJson(s, source);
    } else if (text || PyObject_HasAttrString(tokenizer.ptr(), "__fspath__")) {
      source = nb::cast<std::string>(nb::module_::import_("os").attr("fsdecode")(tokenizer));
      tok = engram::LoadTokenizerJson(source);
    } else {
      throw nb::type_error(("tokenizer_json: must be a path or the JSON text of a tokenizer.json, got a " +
                            std::string(Py_TYPE(tokenizer.ptr())->tp_name))
                               .c_str());
    }
    const engram::TokenMap map = engram::BuildTokenMap(tok);
    return std::make_tuple(FromVector<int64_t>(map.map, {map.map.size()}), map.compressed_size, source);
  }, "tokenizer_json"_a.none());

  // §STO.3 bf16 bits of codes[..., d] times scales[..., d/32].
  m.def("decode_rows", [](nb::handle codes_obj, nb::handle scales_obj) {
    const auto codes = engram::py::ByteArray(codes_obj, "codes", engram::py::Elements::kE4M3);
    const auto scales = engram::py::ByteArray(scales_obj, "scales", engram::py::Elements::kE8M0);
    if (codes.ndim() == 0) throw engram::Error("codes: a scalar; expected an array [..., head_dim]");
    const size_t d = codes.shape.back();
    if (d % engram::kScaleBlock != 0) {
      throw engram::Error("codes: the last dimension is " + std::to_string(d) + ", not a multiple of 32 (§STO.3)");
    }
    std::vector<size_t> want = codes.shape;
    want.back() = d / engram::kScaleBlock;
    if (scales.shape != want) {
      throw engram::Error("scales: shape " + engram::py::ShapeText(scales.shape) + " but codes of shape " +
                          engram::py::ShapeText(codes.shape) + " need " + engram::py::ShapeText(want) +
                          " (one scale per 32 codes, §STO.3)");
    }
    auto out = Owned<uint16_t>(codes.shape);
    for (size_t i = 0; i < codes.size(); ++i) {
      out.data()[i] = engram::DecodeElement(codes.data[i], scales.data[i / engram::kScaleBlock]);
    }
    return out;
  }, "codes"_a.none(), "scales"_a.none());
  m.def("decode_e4m3", [](nb::handle c) { return engram::DecodeE4M3(static_cast<uint8_t>(Int(c, "code", kByte))); },
        "code"_a.none());
  m.def("decode_e8m0", [](nb::handle s) { return engram::DecodeE8M0(static_cast<uint8_t>(Int(s, "scale", kByte))); },
        "scale"_a.none());
  m.def("decode_element", [](nb::handle c, nb::handle s) {
    return engram::DecodeElement(static_cast<uint8_t>(Int(c, "code", kByte)), static_cast<uint8_t>(Int(s, "scale", kByte)));
  }, "code"_a.none(), "scale"_a.none());

  // §STO.7 [begin, end) of rank `rank`, or of every rank (a list) when rank is None.
  m.def("row_shards", [](nb::handle rows_obj, nb::handle world_obj, nb::handle rank_obj) -> nb::object {
    const int64_t rows = Int(rows_obj, "rows", kRows);
    const int world = static_cast<int>(Int(world_obj, "world", kWorld));
    if (!rank_obj.is_none()) {
      const engram::Shard s = engram::RowShard(rows, static_cast<int>(Int(rank_obj, "rank", RankRule(world))), world);
      return nb::make_tuple(s.begin, s.end);
    }
    nb::list all;
    for (int r = 0; r < world; ++r) {
      const engram::Shard s = engram::RowShard(rows, r, world);
      all.append(nb::make_tuple(s.begin, s.end));
    }
    return all;
  }, "rows"_a.none(), "world"_a.none(), "rank"_a.none() = nb::none());
  m.def("head_shard", [](nb::handle columns, nb::handle world_obj, nb::handle rank) {
    const int world = static_cast<int>(Int(world_obj, "world", kWorld));
    const engram::HeadRange s = engram::HeadShard(static_cast<int>(Int(columns, "columns", kColumns)),
                                                  static_cast<int>(Int(rank, "rank", RankRule(world))), world);
    return std::make_pair(s.begin, s.end);
  }, "columns"_a.none(), "world"_a.none(), "rank"_a.none());
  m.def("owner_rank", [](nb::handle rows_obj, nb::handle world, nb::handle row) {
    const int64_t rows = Int(rows_obj, "rows", {1, kRows.hi, kRows.why});
    return engram::OwnerRank(rows, static_cast<int>(Int(world, "world", kWorld)),
                             Int(row, "row", {0, rows - 1, "a row of the table"}));
  }, "rows"_a.none(), "world"_a.none(), "row"_a.none());

  m.def("gate_v41", [](nb::handle dot, nb::handle p) {
    return GatePartsDict(engram::GateV41(engram::py::Real(dot, "dot"), ParsePrecision(p)));
  }, "dot"_a.none(), "precision"_a.none() = "float64");
  m.def("gate_demo", [](nb::handle g, nb::handle p) {
    return GatePartsDict(engram::GateDemo(engram::py::Real(g, "g"), ParsePrecision(p)));
  }, "g"_a.none(), "precision"_a.none() = "float64");
  m.def("fuse_v41_stream",
        [](nb::handle h_obj, nb::handle key_obj, nb::handle value_obj, nb::handle qw_obj, nb::handle kw_obj,
           nb::handle eps_obj, nb::handle masked_obj, nb::handle p_obj) {
          const auto h = engram::py::Bf16Array(h_obj, "h");
          const auto key = engram::py::Bf16Array(key_obj, "key");
          const auto value = engram::py::Bf16Array(value_obj, "value");
          const auto qw = engram::py::Bf16Array(qw_obj, "q_weight");
          const auto kw = engram::py::Bf16Array(kw_obj, "k_weight");
          const double eps = engram::py::Real(eps_obj, "eps");
          // §FUS.3 eps is norm_eps, which a configuration gives as a finite number >= 0 (reference/config.cc).
          if (!(eps >= 0.0) || !std::isfinite(eps)) {
            throw engram::Error("eps: must be a finite number >= 0 (norm_eps, §FUS.3), got " +
                                nb::cast<std::string>(nb::str(eps_obj)));
          }
          const bool masked = engram::py::Bool(masked_obj, "masked");
          const engram::Precision p = ParsePrecision(p_obj);
          const engram::V41StreamTrace t = engram::FuseV41Stream(h.data, key.data, value.data, qw.data, kw.data, eps,
                                                                 masked, p);
          nb::dict d;
          d["dot"] = t.dot;
          d["gate"] = t.gate;
          d["gate_parts"] = GatePartsDict(t.gate_parts);
          d["rstd"] = t.rstd;
          d["out"] = FromVector<double>(t.out, {t.out.size()});
          d["out_bf16"] = FromVector<uint16_t>(t.out_bf16, {t.out_bf16.size()});
          return d;
        },
        "h"_a.none(), "key"_a.none(), "value"_a.none(), "q_weight"_a.none(), "k_weight"_a.none(), "eps"_a.none(),
        "masked"_a.none() = false, "precision"_a.none() = "float64");
  m.def("demo_params", [](nb::handle params) { return ParamsDict(ParamsFrom(params, false)); }, "params"_a.none());
  m.def("short_conv", [](nb::handle value_obj, nb::handle params, nb::handle p_obj) {
    const engram::DemoParams q = ParamsFrom(params);
    const auto value = engram::py::RealArray(value_obj, "value");
    const size_t width = q.hc * q.hidden;
    if (value.ndim() != 2 || value.shape[1] != width) {
      throw engram::Error("value: shape " + engram::py::ShapeText(value.shape) + "; ShortConv takes value[T, hc * hidden] = [T, " +
                          std::to_string(width) + "] (§FUS.7)");
    }
    const size_t steps = value.shape[0];
    const engram::ShortConvTrace t = engram::ShortConv(value.data, steps, q, ParsePrecision(p_obj));
    nb::dict d;
    d["normed"] = FromVector<double>(t.normed, {steps, width});
    d["conv"] = FromVector<double>(t.conv, {steps, width});
    d["act"] = FromVector<double>(t.act, {steps, width});
    return d;
  }, "value"_a.none(), "params"_a.none(), "precision"_a.none() = "float64");
  m.def("demo_forward", [](nb::handle e_obj, nb::handle hidden_obj, nb::handle params, nb::handle p_obj) {
    const engram::DemoParams q = ParamsFrom(params);
    const auto e = engram::py::RealArray(e_obj, "e");
    const auto hidden = engram::py::RealArray(hidden_obj, "hidden");
    if (e.ndim() != 2 || e.shape[1] != q.in) {
      throw engram::Error("e: shape " + engram::py::ShapeText(e.shape) + "; the forward takes e[T, in] = [T, " +
                          std::to_string(q.in) + "] (§FUS.6)");
    }
    const size_t steps = e.shape[0];
    const bool flat = hidden.ndim() == 2 && hidden.shape[0] == steps && hidden.shape[1] == q.hc * q.hidden;
    const bool full = hidden.ndim() == 3 && hidden.shape[0] == steps && hidden.shape[1] == q.hc && hidden.shape[2] == q.hidden;
    if (!flat && !full) {
      throw engram::Error("hidden: shape " + engram::py::ShapeText(hidden.shape) + "; the forward takes hidden[T, hc, hidden] = " +
                          engram::py::ShapeText({steps, q.hc, q.hidden}) + " (§FUS.6)");
    }
    const engram::DemoForwardTrace t = engram::DemoForward(e.data, hidden.data, steps, q, ParsePrecision(p_obj));
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
  }, "e"_a.none(), "hidden"_a.none(), "params"_a.none(), "precision"_a.none() = "float64");

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
  m.def("random_doc", [](nb::handle suite, nb::handle seed, nb::handle n) {
    return RandomDoc(engram::py::Str(suite, "suite", "a suite name"), static_cast<uint64_t>(Int(seed, "seed", kSeed)),
                     Int(n, "n", kCases));
  }, "suite"_a.none(), "seed"_a.none(), "n"_a.none());
  // The first n of `type`, among at most 100 n cases (at least 10,000): a type the suite draws one time in a
  // hundred still comes n times on average, and a type it never draws costs a bounded search.
  m.def("random_numbers", [](nb::handle suite, nb::handle seed, nb::handle n_obj, nb::handle type) {
    const int64_t n = Int(n_obj, "n", kCases);
    return RandomNumbers(engram::py::Str(suite, "suite", "a suite name"), static_cast<uint64_t>(Int(seed, "seed", kSeed)),
                         n, engram::py::Str(type, "type", "a test type"), std::max<int64_t>(10000, 100 * n));
  }, "suite"_a.none(), "seed"_a.none(), "n"_a.none(), "type"_a.none());
  m.def("random_typed", [](nb::handle suite, nb::handle seed, nb::handle n_obj, nb::handle type) {
    const int64_t n = Int(n_obj, "n", kCases);
    return RandomTyped(engram::py::Str(suite, "suite", "a suite name"), static_cast<uint64_t>(Int(seed, "seed", kSeed)),
                       n, engram::py::Str(type, "type", "a test type"), std::max<int64_t>(10000, 100 * n));
  }, "suite"_a.none(), "seed"_a.none(), "n"_a.none(), "type"_a.none());
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

  // The `engram` command line in this process (python -m engram_conformance): `self` starts it again
  // (conform --lib's plug-in host), `schemas` and `vectors` are the package's.
  m.def("cli_main", [](const std::vector<std::string>& argv, const std::vector<std::string>& self,
                       const std::string& schemas, const std::string& vectors) {
    engram::cli::SetHost({self, schemas, vectors});
    std::vector<const char*> words;
    for (const std::string& w : argv) words.push_back(w.c_str());
    int rc = 0;
    {
      nb::gil_scoped_release release;
      rc = engram::cli::Main(static_cast<int>(words.size()), words.data());
      std::cout.flush();
      std::cerr.flush();
      std::fflush(nullptr);
    }
    return rc;
  }, "argv"_a, "self"_a, "schemas"_a, "vectors"_a);

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
  m.def("random_case_doc", [](nb::handle suite, nb::handle seed, nb::handle index) {
    return RandomCaseDoc(engram::py::Str(suite, "suite", "a suite name"), static_cast<uint64_t>(Int(seed, "seed", kSeed)),
                         Int(index, "index", {1, kInt64Max, "a case number"}));
  }, "suite"_a.none(), "seed"_a.none(), "index"_a.none());
  m.def("random_types", [](nb::handle suite, nb::handle seed, nb::handle n) {
    return RandomTypes(engram::py::Str(suite, "suite", "a suite name"), static_cast<uint64_t>(Int(seed, "seed", kSeed)),
                       Int(n, "n", kCases));
  }, "suite"_a.none(), "seed"_a.none(), "n"_a.none());
  m.def("session_problems", &SessionProblems, "outcomes"_a, "random"_a);
}
