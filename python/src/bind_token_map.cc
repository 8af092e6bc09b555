// §TOK engram_conformance._core.build_token_map: reference/token_map.cc on a tokenizer.json.
#include <string>
#include <tuple>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include "python/src/bind.h"
#include "reference/token_map.h"

namespace engram::py {
namespace {

using namespace nb::literals;

// §TOK.1-§TOK.4 A tokenizer.json given as a path or as its JSON text.
std::tuple<nb::ndarray<nb::numpy, int64_t>, int64_t, std::string> BuildTokenMap(nb::handle tokenizer) {
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
}

}  // namespace

void BindTokenMap(nb::module_& m) {
  m.def("build_token_map", &BuildTokenMap, "tokenizer_json"_a.none(),
        nb::sig("def build_token_map(tokenizer_json: str | os.PathLike[str]) "
                "-> tuple[numpy.typing.NDArray[numpy.int64], int, str]"),
        "§TOK.1-§TOK.4 (map, compressed size, source) of a tokenizer.json path or its JSON text.");
}

}  // namespace engram::py
