// §CFG, §LAY engram_conformance._core.Layout: a configuration (shipped, a config.json path or a dict of its keys)
// and the layout reference/layout.cc builds from it, as `engram layout` resolves them.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "base/error.h"
#include "conformance/cli/common.h"
#include "python/src/args.h"
#include "python/src/bind.h"
#include "reference/config.h"
#include "reference/layout.h"

namespace engram::py {
namespace {

using namespace nb::literals;

// The CLI's caps (conformance/cli/common.h).
const IntRule kVocab{1, engram::cli::kMaxCompressedVocabSize,
                     "the size of a token map, whose compressed ids are < 2^31, §TOK.5"};
const IntRule kPad{0, engram::cli::kMaxCompressedVocabSize - 1, "a compressed id, below compressed_vocab_size, §TOK.5"};

// The configuration argument: a shipped one by name, a config.json path, or a dict of its keys (§CFG.1: a
// profile overrides what a file's keys say).
engram::EngramConfig ConfigArg(nb::handle config_arg, const std::optional<engram::Profile>& override_profile,
                               const std::string& profile) {
  PyObject* c = config_arg.ptr();
  if (PyUnicode_Check(c) && (nb::cast<std::string>(config_arg) == "v4.1" || nb::cast<std::string>(config_arg) == "demo-v1")) {
    const std::string builtin = nb::cast<std::string>(config_arg);
    engram::EngramConfig config = builtin == "v4.1" ? engram::V41FlashConfig() : engram::DemoV1Config();
    // A profile overrides what a file's keys say (§CFG.1); a shipped configuration has one.
    if (override_profile && *override_profile != config.profile) {
      throw engram::Error("profile: '" + profile + "' contradicts the shipped configuration '" + builtin +
                          "' (a profile overrides what a config file's keys say, §CFG.1; pass a path or a dict)");
    }
    return config;
  }
  if (PyUnicode_Check(c) || PyObject_HasAttrString(c, "__fspath__")) {
    nb::object path = nb::module_::import_("os").attr("fsdecode")(config_arg);
    return engram::LoadConfig(nb::cast<std::string>(path), override_profile);
  }
  if (PyDict_Check(c) || PyObject_HasAttrString(c, "keys")) {
    const std::string text = JsonText(nb::module_::import_("builtins").attr("dict")(config_arg));
    return engram::ParseConfig(nlohmann::json(ParseJson(text, "config")), "config", override_profile);
  }
  throw nb::type_error(("config: must be a config.json path, a dict of its keys, or 'v4.1' / 'demo-v1', got " +
                        nb::cast<std::string>(nb::repr(config_arg)).substr(0, 60) + " (a " + Py_TYPE(c)->tp_name +
                        ")")
                           .c_str());
}

// §LAY.4 V: the one given, else the configuration's; a v4.1 configuration's own must agree.
int64_t VocabOf(const engram::EngramConfig& config, const std::optional<int64_t>& v_given) {
  if (!v_given) {
    if (!config.compressed_vocab_size) {
      throw engram::Error(config.source + ": no compressed vocab size: pass compressed_vocab_size (§LAY.4)");
    }
    return *config.compressed_vocab_size;
  }
  const int64_t v = *v_given;
  if (config.profile == engram::Profile::kV41 && config.compressed_vocab_size && *config.compressed_vocab_size != v) {
    throw engram::Error(config.source + ": key 'engram_compressed_vocab_size': config says " +
                        std::to_string(*config.compressed_vocab_size) + " but compressed_vocab_size is " +
                        std::to_string(v));
  }
  return v;
}

// §CFG, §LAY.4, §TOK.5: the configuration, V and the compressed pad as `engram layout` resolves them without a
// token map (conformance/cli/common.cc Load), or as a vector group gives them.
void InitLayout(PyLayout* self, nb::handle config_arg, nb::handle v_arg, nb::handle pad_arg, nb::handle profile_arg) {
  std::optional<engram::Profile> override_profile;
  std::string profile;
  if (!profile_arg.is_none()) {
    profile = Str(profile_arg, "profile", "'v4.1' or 'demo-v1'");
    override_profile = engram::ParseProfile(profile);
    if (!override_profile) throw engram::Error("profile: '" + profile + "' is neither 'v4.1' nor 'demo-v1' (§CFG.1)");
  }
  const std::optional<int64_t> v_given = OptionalInt(v_arg, "compressed_vocab_size", kVocab);
  const std::optional<int64_t> pad = OptionalInt(pad_arg, "compressed_pad", kPad);
  engram::EngramConfig config = ConfigArg(config_arg, override_profile, profile);
  const int64_t v = VocabOf(config, v_given);
  const int64_t p = pad.value_or(config.pad_id);
  if (!pad && (p < 0 || p >= v)) {
    throw engram::Error(config.source + ": pad id " + std::to_string(p) + " is not a compressed id below " +
                        std::to_string(v) + " (without a token map the pad id is used as a compressed id)");
  }
  engram::Layout layout = engram::BuildLayout(config, v, p);
  new (self) PyLayout{std::move(config), std::move(layout), std::nullopt};
  self->fresh.emplace(self->layout);  // points at self->layout, which nanobind never moves
}

// One value per layer of the layout.
template <class F>
auto PerLayer(const PyLayout& l, F f) {
  std::vector<decltype(f(l.layout.layers.front()))> v;
  for (const auto& x : l.layout.layers) v.push_back(f(x));
  return v;
}

}  // namespace

const PyLayout& LayoutArg(nb::handle v) {
  if (!nb::isinstance<PyLayout>(v)) {
    throw nb::type_error(("layout: must be an engram.Layout, got a " + std::string(Py_TYPE(v.ptr())->tp_name)).c_str());
  }
  return nb::cast<const PyLayout&>(v);
}

void BindConfig(nb::module_& m) {
  nb::class_<PyLayout>(m, "Layout", "§LAY The layout of a configuration (use engram_conformance.Layout).")
      .def("__init__", &InitLayout, "config"_a.none(), "compressed_vocab_size"_a.none() = nb::none(),
           "compressed_pad"_a.none() = nb::none(), "profile"_a.none() = nb::none(),
           nb::sig("def __init__(self, config: str | os.PathLike[str] | collections.abc.Mapping[str, typing.Any], "
                   "compressed_vocab_size: int | None = None, compressed_pad: int | None = None, "
                   "profile: str | None = None) -> None"),
           "config: a config.json path, a dict of its keys, or 'v4.1' / 'demo-v1'; integers by the CLI's rule.")
      .def_prop_ro("profile", [](const PyLayout& l) { return std::string(engram::ProfileName(l.layout.profile)); })
      .def_prop_ro("compressed_vocab_size", [](const PyLayout& l) { return l.layout.compressed_vocab_size; })
      .def_prop_ro("compressed_pad", [](const PyLayout& l) { return l.layout.pad; })
      .def_prop_ro("max_ngram", [](const PyLayout& l) { return l.layout.max_ngram; })
      .def_prop_ro("heads", [](const PyLayout& l) { return l.layout.heads; })
      .def_prop_ro("columns", [](const PyLayout& l) { return l.layout.columns(); })
      .def_prop_ro("layer_ids", [](const PyLayout& l) { return PerLayer(l, [](const auto& x) { return x.layer_id; }); })
      .def_prop_ro("multipliers", [](const PyLayout& l) { return PerLayer(l, [](const auto& x) { return x.multipliers; }); },
                   "§RNG.4 per layer, one per look-back slot.")
      .def_prop_ro("primes", [](const PyLayout& l) { return PerLayer(l, [](const auto& x) { return x.primes; }); },
                   "§LAY.2 per layer, [order index n-2][head].")
      .def_prop_ro("offsets", [](const PyLayout& l) { return PerLayer(l, [](const auto& x) { return x.offsets; }); },
                   "§LAY.3 per layer, per column.")
      .def_prop_ro("num_embeddings",
                   [](const PyLayout& l) { return PerLayer(l, [](const auto& x) { return x.num_embeddings; }); })
      .def_prop_ro("fingerprint", [](const PyLayout& l) { return engram::LayoutFingerprint(l.layout); });
}

}  // namespace engram::py
