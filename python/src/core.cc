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
// buffers. This file holds the module and its error; each area binds its
// functions in a bind_<area>.cc (bind.h).
#include <string>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "python/src/bind.h"
#include "vectors/generator.h"
#include "vectors/random_cases.h"

namespace nb = nanobind;

namespace engram::py {

ojson ParseJson(const std::string& text, const std::string& what) {
  try {
    return ojson::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw engram::Error(what + ": not JSON (" + std::string(e.what()) + ")");
  }
}

std::string JsonText(nb::handle v) { return nb::cast<std::string>(nb::module_::import_("json").attr("dumps")(v)); }

}  // namespace engram::py

NB_MODULE(_core, m) {
  m.doc() =
      "The Engram reference in-process: nanobind bindings of the C++ reference, vectors and runner\n"
      "(python/src, one bind_<area>.cc per area).\n\n"
      "The public API is engram_conformance (engram_conformance/__init__.py), engram_conformance.vectors and\n"
      "engram_conformance.pytest_plugin; each function there cites its spec § id.";
  nb::exception<engram::Error> error(m, "Error", PyExc_ValueError);
  error.attr("__doc__") =
      "§GEN.4 A refusal: the message names where (file, key, field, position) and what (the value), as the CLI\n"
      "prints it after ``engram: error:``.";
  m.attr("SPEC_VERSION") = engram::vectors::kSpecVersion;
  m.attr("RANDOM_VERSION") = engram::vectors::kRandomVersion;
  m.attr("VERSION") = ENGRAM_VERSION;
  engram::py::BindConfig(m);
  engram::py::BindHash(m);
  engram::py::BindTokenMap(m);
  engram::py::BindStorage(m);
  engram::py::BindFusion(m);
  engram::py::BindVectors(m);
  engram::py::BindConform(m);
}
