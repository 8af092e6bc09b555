// §ERR Untrusted input files: bounded reads (§ERR.4) and strict JSON (§ERR.5).
#include "reference/input_files.h"

#include "base/error.h"
#include "base/fileio.h"
#include "base/json_depth.h"

namespace engram {

uint64_t InputSizeLimit(InputKind kind) {
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  // §ERR.4 Each limit is far above any real file of its kind (the V4.1 config
  // is 2 KB, the DeepSeek tokenizer.json 7.5 MB, the largest vector file
  // 1 MB) and far below what would exhaust memory.
  switch (kind) {
    case InputKind::kConfig: return 16 * kMiB;
    case InputKind::kTokenizer: return 512 * kMiB;
    case InputKind::kTokenMap: return 16 * kMiB;  // §ERR.3 parsed whole: 16 MiB of "0," takes 327 MiB
    case InputKind::kContract: return 64 * kMiB;
    case InputKind::kHistory: return 64 * kMiB;
    case InputKind::kVectorFile: return 256 * kMiB;
    case InputKind::kManifest: return 1 * kMiB;
    case InputKind::kExpectFail: return 16 * kMiB;
    case InputKind::kFusionInput: return 256 * kMiB;
  }
  return 0;
}

std::string InputKindName(InputKind kind) {
  switch (kind) {
    case InputKind::kConfig: return "configuration file";
    case InputKind::kTokenizer: return "tokenizer file";
    case InputKind::kTokenMap: return "token-map file";
    case InputKind::kContract: return "contract file";
    case InputKind::kHistory: return "history file";
    case InputKind::kVectorFile: return "vector or schema file";
    case InputKind::kManifest: return "manifest";
    case InputKind::kExpectFail: return "expected-failures file";
    case InputKind::kFusionInput: return "fusion input file";
  }
  return "input file";
}

namespace {

std::string LimitText(InputKind kind) {
  return std::to_string(InputSizeLimit(kind) >> 20) + " MiB, the limit for a " + InputKindName(kind) + " (§ERR.4)";
}

}  // namespace

std::string ReadInputFile(const std::filesystem::path& path, InputKind kind, bool regular_only) {
  // The reading itself is the ground floor's (base/fileio.h); the rule is the
  // limit per kind above.
  return ReadFileWithin(path, InputSizeLimit(kind), InputKindName(kind), LimitText(kind), regular_only);
}

// ---------------------------------------------------------------------------
// §ERR.5 Unique keys

void JsonKeyChecker::StartObject() {
  levels_.push_back(Level{});
  levels_.back().object = true;
}

void JsonKeyChecker::StartArray() { levels_.push_back(Level{}); }

void JsonKeyChecker::End() {
  if (!levels_.empty()) levels_.pop_back();
  Value();  // the finished container is one element of its parent
}

void JsonKeyChecker::Value() {
  if (!levels_.empty() && !levels_.back().object) ++levels_.back().index;
}

void JsonKeyChecker::Key(const std::string& key) {
  if (levels_.empty() || !levels_.back().object) return;
  Level& level = levels_.back();
  if (!level.keys.insert(key).second) {
    const std::string where = Path();
    throw Error(source_ + ": duplicate key '" + key + "' in " + (where.empty() ? "the top-level object" : "the object at " + where) +
                " (§ERR.5: JSON objects must not repeat a key)");
  }
  level.key = key;
}

std::string JsonKeyChecker::Path() const {
  std::string out;
  // Every level but the innermost contributes the key or index it is at; the
  // innermost is the object whose key repeats.
  for (size_t i = 0; i + 1 < levels_.size(); ++i) {
    if (levels_[i].object) {
      const std::string& k = levels_[i].key;
      if (!out.empty()) out += '.';
      out += k.empty() ? std::string("\"\"") : k;  // an empty key is shown as ""
    } else {
      // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive,
      // GCC bug 105329) on "literal" + std::string&& here.
      out += '[';
      out += std::to_string(levels_[i].index);
      out += ']';
    }
  }
  return out;
}

namespace {

template <typename Json>
Json ParseStrict(std::string_view text, std::string_view source) {
  // §ERR.6 Depth first: a value nested a million deep is built by the parser
  // but kills whatever walks it recursively afterwards (base/json_depth.h).
  CheckJsonDepth(text, source);
  JsonKeyChecker keys{std::string(source)};
  // nlohmann's parser callback sees every event in document order; it keeps
  // every value (returns true) and only watches the keys.
  auto watch = [&](int /*depth*/, typename Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start: keys.StartObject(); break;
      case Json::parse_event_t::array_start: keys.StartArray(); break;
      case Json::parse_event_t::object_end:
      case Json::parse_event_t::array_end: keys.End(); break;
      case Json::parse_event_t::key: keys.Key(parsed.template get<std::string>()); break;
      case Json::parse_event_t::value: keys.Value(); break;
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), watch);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or a number out of range
    throw Error(std::string(source) + ": malformed JSON: " + e.what());
  }
}

}  // namespace

nlohmann::json ParseJson(std::string_view text, std::string_view source) { return ParseStrict<nlohmann::json>(text, source); }

nlohmann::ordered_json ParseOrderedJson(std::string_view text, std::string_view source) {
  return ParseStrict<nlohmann::ordered_json>(text, source);
}

}  // namespace engram
