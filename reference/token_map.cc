// spec/token_map.md — compressed token maps: tokenizer.json loading (§TOK.1),
// single-id decode (§TOK.2), the normalizer chain (§TOK.3), first-seen keys
// (§TOK.4), map files (§TOK.5) and the digest (§TOK.6).
#include "reference/token_map.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/ustring.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "base/error.h"
#include "base/json_depth.h"
#include "base/sha256.h"
#include "reference/config.h"

namespace engram {

int64_t TokenMap::Lookup(int64_t raw, std::string_view what) const {
  if (raw < 0 || raw >= tokens()) {
    throw Error(std::string(what) + ": token id " + std::to_string(raw) + " is outside the token map [0, " +
                std::to_string(tokens()) + ") of " + source);
  }
  return map[static_cast<size_t>(raw)];
}

TokenMap ParseTokenMap(const nlohmann::json& doc, std::string_view source) {
  TokenMap tm;
  tm.source = std::string(source);
  const nlohmann::json* array = &doc;
  std::optional<int64_t> declared;
  if (doc.is_object()) {
    if (!doc.contains("map")) throw Error(std::string(source) + ": key 'map': missing");
    array = &doc["map"];
    if (doc.contains("compressed_size")) {
      const nlohmann::json& v = doc["compressed_size"];
      if (!v.is_number_integer() || v.get<int64_t>() < 1) {
        throw Error(std::string(source) + ": key 'compressed_size': expected an integer >= 1, got " + v.dump());
      }
      declared = v.get<int64_t>();
    }
  }
  if (!array->is_array()) {
    throw Error(std::string(source) + ": key 'map': expected an array of integers, got " +
                std::string(array->type_name()));
  }
  if (array->empty()) throw Error(std::string(source) + ": key 'map': is empty");
  int64_t max_entry = -1;
  tm.map.reserve(array->size());
  for (size_t i = 0; i < array->size(); ++i) {
    const nlohmann::json& e = (*array)[i];
    if (!e.is_number_integer() || e.get<int64_t>() < 0 ||
        (e.is_number_unsigned() && e.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))) {
      throw Error(std::string(source) + ": key 'map': entry " + std::to_string(i) +
                  " must be an integer in [0, 2^31), got " + e.dump());
    }
    int64_t v = e.get<int64_t>();
    if (v > std::numeric_limits<int32_t>::max()) {
      throw Error(std::string(source) + ": key 'map': entry " + std::to_string(i) + " must be < 2^31, got " + e.dump());
    }
    // §TOK.4 A built map is first-seen: raw ids in order meet the compressed
    // ids 0, 1, 2, ... in order, each new one the next. Any function into
    // [0, V) hashes (§TOK.5), so another map is accepted, but it is not one a
    // tokenizer builds, and the first place it departs is recorded.
    if (v > max_entry + 1 && tm.not_built.empty()) {
      tm.not_built = "entry " + std::to_string(i) + " is " + std::to_string(v) + " where a built map would give " +
                     std::to_string(max_entry + 1) + " (the next unused id) or an id already seen";
    }
    max_entry = std::max(max_entry, v);
    tm.map.push_back(v);
  }
  // §TOK.5 V is the declared size, else the largest entry + 1; every entry
  // must be below it (the map is a function into [0, V)).
  tm.compressed_size = declared ? *declared : max_entry + 1;
  tm.size_declared = declared.has_value();
  if (declared && *declared <= max_entry) {
    throw Error(std::string(source) + ": key 'compressed_size': is " + std::to_string(*declared) +
                " but the map holds compressed id " + std::to_string(max_entry) + " (every id must be below V)");
  }
  // §TOK.5 A map that says it was built from a tokenizer (`engram token-map`
  // writes "sha256" and "tokens") is held to it: its digest, its length and
  // first-seen ids.
  if (doc.is_object() && doc.contains("sha256")) {
    const std::string digest = TokenMapDigest(tm);
    if (!doc["sha256"].is_string() || doc["sha256"].get<std::string>() != digest) {
      throw Error(std::string(source) + ": key 'sha256': is " + doc["sha256"].dump() + " but the map's digest (§TOK.6) is " +
                  digest + ": the map was edited after it was built");
    }
    if (!tm.not_built.empty()) {
      throw Error(std::string(source) + ": key 'map': a tokenizer-built map (it carries 'sha256') must be first-seen (§TOK.4), but " +
                  tm.not_built);
    }
  }
  if (doc.is_object() && doc.contains("tokens") && doc["tokens"] != static_cast<int64_t>(tm.map.size())) {
    throw Error(std::string(source) + ": key 'tokens': is " + doc["tokens"].dump() + " but the map has " +
                std::to_string(tm.map.size()) + " entries");
  }
  if (tm.not_built.empty() && max_entry + 1 != tm.compressed_size) {
    tm.not_built = "compressed ids " + std::to_string(max_entry + 1) + " .. " + std::to_string(tm.compressed_size - 1) +
                   " of V = " + std::to_string(tm.compressed_size) + " are never used";
  }
  return tm;
}

TokenMap LoadTokenMapFile(const std::filesystem::path& path) {
  return ParseTokenMap(ReadJsonFile(path, InputKind::kTokenMap), path.string());
}

TokenMap IdentityTokenMap(int64_t n) {
  if (n < 1) throw Error("identity token map needs a size >= 1, got " + std::to_string(n));
  TokenMap tm;
  tm.source = "<identity map of " + std::to_string(n) + " ids>";
  tm.compressed_size = n;
  tm.map.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) tm.map[static_cast<size_t>(i)] = i;
  return tm;
}

// §TOK.6 A digest over the whole map tells apart two maps of the same size
// (a tokenizer revision mismatch), which a size check cannot.
std::string TokenMapDigest(const TokenMap& token_map) {
  std::string bytes;
  bytes.reserve(token_map.map.size() * 4);
  for (int64_t v : token_map.map) {
    uint32_t u = static_cast<uint32_t>(static_cast<int32_t>(v));
    for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<char>((u >> (8 * b)) & 0xFF));  // little-endian
  }
  return Sha256Hex(bytes);
}

// ---------------------------------------------------------------------------
// §TOK.1 tokenizer.json

namespace {

using nlohmann::json;

// A token or text inside an error message: JSON-quoted, so that spaces,
// control characters and U+FFFD stay visible.
std::string Quoted(std::string_view s) {
  return json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace);
}

// Reads a tokenizer.json in one pass. model.vocab goes straight into a list
// of (token, id) pairs and model.merges is skipped (the map never needs the
// merges); everything else becomes an ordinary JSON value. The vocab alone
// is most of a real file, so this keeps loading fast without a second
// representation of it.
class TokenizerJsonReader : public nlohmann::json_sax<json> {
 public:
  explicit TokenizerJsonReader(const std::string& source) : keys_(source) {}
  json root;
  std::vector<std::pair<std::string, int64_t>> vocab;
  bool vocab_seen = false;
  std::string problem;  // why parsing stopped, when it did

  // A vocab id that is null or a boolean is refused like any non-integer id
  // (HF: "invalid type: null, expected u32"), not dropped.
  bool null() override {
    Element();
    if (mode_ == Mode::kVocab) return VocabId("null");
    return mode_ == Mode::kSkip || Scalar(json(nullptr));
  }
  bool boolean(bool v) override {
    Element();
    if (mode_ == Mode::kVocab) return VocabId(v ? "true" : "false");
    return mode_ == Mode::kSkip || Scalar(json(v));
  }
  bool number_integer(number_integer_t v) override {
    Element();
    if (mode_ == Mode::kSkip) return true;
    if (mode_ == Mode::kVocab) return VocabId(json(v).dump());
    return Scalar(json(v));
  }
  bool number_unsigned(number_unsigned_t v) override {
    Element();
    if (mode_ == Mode::kSkip) return true;
    if (mode_ == Mode::kVocab) {
      if (v > static_cast<number_unsigned_t>(std::numeric_limits<int32_t>::max())) return VocabId(std::to_string(v));
      vocab.emplace_back(std::move(vocab_key_), static_cast<int64_t>(v));
      return true;
    }
    return Scalar(json(v));
  }
  bool number_float(number_float_t v, const string_t& text) override {
    Element();
    if (mode_ == Mode::kSkip) return true;
    if (mode_ == Mode::kVocab) return VocabId(text);
    return Scalar(json(v));
  }
  bool string(string_t& v) override {
    Element();
    if (mode_ == Mode::kSkip) return true;  // the merges: most of the strings in a file
    if (mode_ == Mode::kVocab) return VocabId(Quoted(v));
    return Scalar(json(std::move(v)));
  }
  bool binary(binary_t&) override { return mode_ == Mode::kSkip || Scalar(json(nullptr)); }
  bool key(string_t& k) override {
    // §ERR.5 a repeated key (a second vocab entry for one token included, or
    // one inside the skipped merges) is refused, never last-wins.
    keys_.Key(k);
    if (mode_ == Mode::kVocab) {
      vocab_key_ = std::move(k);
    } else if (mode_ == Mode::kDom) {
      key_ = std::move(k);
    }  // kSkip: nothing
    return true;
  }
  bool start_object(std::size_t) override {
    keys_.StartObject();
    return Open(json::object());
  }
  bool start_array(std::size_t) override {
    keys_.StartArray();
    return Open(json::array());
  }
  bool end_object() override {
    keys_.End();
    return Close();
  }
  bool end_array() override {
    keys_.End();
    return Close();
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    problem = std::string("not valid JSON: ") + e.what();
    return false;
  }

 private:
  enum class Mode { kDom, kVocab, kSkip };

  void Element() { keys_.Value(); }  // every value, in every mode: §ERR.5 holds in skipped parts too

  // The container just opened sits directly in root["model"] under `name`.
  bool InModel(const char* name) const {
    return stack_.size() == 2 && names_[1] == "model" && stack_[1]->is_object() && key_ == name;
  }
  bool VocabId(const std::string& value) {
    problem = "key 'model.vocab': token " + Quoted(vocab_key_) + " has id " + value +
              "; ids must be integers in [0, 2^31)";
    return false;
  }
  json* Put(json v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    json& parent = *stack_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    json& slot = parent[key_];
    slot = std::move(v);
    return &slot;
  }
  bool Scalar(json v) {
    Put(std::move(v));
    return true;
  }
  bool Open(json container) {
    if (mode_ == Mode::kSkip) {
      ++skip_depth_;
      return true;
    }
    if (mode_ == Mode::kVocab) {
      problem = "key 'model.vocab': token " + Quoted(vocab_key_) + " has a non-integer id (an object or array)";
      return false;
    }
    if (container.is_object() && InModel("vocab")) {
      mode_ = Mode::kVocab;
      vocab_seen = true;
      vocab.reserve(1 << 17);
      return true;
    }
    if (InModel("merges")) {  // the map never needs the merges
      mode_ = Mode::kSkip;
      skip_depth_ = 1;
      return true;
    }
    std::string name = stack_.empty() ? "" : (stack_.back()->is_array() ? "[]" : key_);
    stack_.push_back(Put(std::move(container)));
    names_.push_back(std::move(name));
    return true;
  }
  bool Close() {
    if (mode_ == Mode::kVocab) {
      mode_ = Mode::kDom;
      return true;
    }
    if (mode_ == Mode::kSkip) {
      if (--skip_depth_ == 0) mode_ = Mode::kDom;
      return true;
    }
    stack_.pop_back();
    names_.pop_back();
    return true;
  }

  Mode mode_ = Mode::kDom;
  int skip_depth_ = 0;
  std::vector<json*> stack_;        // the open containers, root first
  std::vector<std::string> names_;  // the key each open container sits under ("" root, "[]" array element)
  std::string key_;                 // the pending object key
  std::string vocab_key_;           // the pending vocab token
  JsonKeyChecker keys_;             // §ERR.5
};

// §TOK.1 Only a ByteLevel decoder (or a Sequence whose only step is one) is
// supported: with it, single-id decode is §TOK.2. A Sequence of two ByteLevel
// steps, or no decoder at all, gives different texts (checked against HF
// tokenizers), so they are refused rather than guessed.
void CheckDecoder(const json& root, const std::string& src) {
  if (!root.contains("decoder") || root["decoder"].is_null()) {
    throw Error(src + ": key 'decoder': missing (null); only a \"ByteLevel\" decoder is supported");
  }
  const json& d = root["decoder"];
  if (!d.is_object() || !d.contains("type") || !d["type"].is_string()) {
    throw Error(src + ": key 'decoder.type': missing; only \"ByteLevel\" is supported");
  }
  const std::string type = d["type"];
  if (type == "ByteLevel") return;
  if (type == "Sequence") {
    const json steps = d.contains("decoders") ? d["decoders"] : json();
    if (steps.is_array() && steps.size() == 1 && steps[0].is_object() && steps[0].contains("type") && steps[0]["type"] == "ByteLevel") {
      return;
    }
    std::string types;
    if (steps.is_array()) {
      for (const json& step : steps) {
        types += (types.empty() ? "" : ", ") +
                 (step.is_object() && step.contains("type") ? step["type"].dump() : std::string("?"));
      }
    }
    throw Error(src + ": key 'decoder.decoders': a \"Sequence\" decoder is supported only when its one step is "
                "\"ByteLevel\"; got [" + types + "]");
  }
  throw Error(src + ": key 'decoder.type': " + Quoted(type) + " is not supported; only \"ByteLevel\" is");
}

}  // namespace

Tokenizer ParseTokenizerJson(std::string_view text, std::string_view source) {
  const std::string src(source);
  CheckJsonDepth(text, src);  // §ERR.6, as every JSON input (reference/input_files.cc)
  TokenizerJsonReader reader(src);
  if (!json::sax_parse(text.begin(), text.end(), &reader)) throw Error(src + ": " + reader.problem);
  const json& root = reader.root;
  if (!root.is_object()) throw Error(src + ": expected a JSON object (a tokenizer.json) at the top level");

  // §TOK.1 The model: byte-level BPE.
  if (!root.contains("model") || !root["model"].is_object()) {
    throw Error(src + ": key 'model': missing or not an object");
  }
  const json& model = root["model"];
  if (!model.contains("type") || !model["type"].is_string()) {
    throw Error(src + ": key 'model.type': missing; only \"BPE\" is supported");
  }
  if (model["type"] != "BPE") {
    throw Error(src + ": key 'model.type': " + model["type"].dump() + " is not supported; only \"BPE\" is");
  }
  if (!reader.vocab_seen) {
    throw Error(src + ": key 'model.vocab': " +
                (model.contains("vocab") ? "expected an object token -> id, got " + std::string(model["vocab"].type_name())
                                         : std::string("missing")));
  }
  CheckDecoder(root, src);

  // §TOK.1 Vocab ids are exactly 0 .. n-1: no id twice, no hole.
  Tokenizer tk;
  tk.source = src;
  const size_t n = reader.vocab.size();
  tk.vocab_entries = static_cast<int64_t>(n);
  tk.tokens.resize(n);
  std::vector<uint8_t> filled(n, 0);
  std::optional<std::pair<std::string, int64_t>> beyond;  // a token whose id is >= n
  for (auto& [token, id] : reader.vocab) {
    const size_t i = static_cast<size_t>(id);
    if (i >= n) {
      if (!beyond) beyond = std::make_pair(token, id);
      continue;
    }
    if (filled[i]) {
      throw Error(src + ": key 'model.vocab': id " + std::to_string(id) + " is given twice, to " +
                  Quoted(tk.tokens[i]) + " and to " + Quoted(token));
    }
    filled[i] = 1;
    tk.tokens[i] = std::move(token);
  }
  if (beyond) {
    const size_t missing = static_cast<size_t>(std::find(filled.begin(), filled.end(), 0) - filled.begin());
    throw Error(src + ": key 'model.vocab': id " + std::to_string(missing) + " has no token (a hole): " +
                std::to_string(n) + " entries must have the ids 0 .. " + std::to_string(n - 1) + ", but token " +
                Quoted(beyond->first) + " has id " + std::to_string(beyond->second));
  }
  // The index below holds views into tk.tokens, so the added tokens appended
  // later must not reallocate it: reserve their room first.
  const json no_added = json::array();
  const json& added_doc = root.contains("added_tokens") && root["added_tokens"].is_array() ? root["added_tokens"] : no_added;
  tk.tokens.reserve(n + added_doc.size());
  std::unordered_map<std::string_view, int64_t> vocab_ids;  // model.token_to_id
  vocab_ids.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    auto [it, inserted] = vocab_ids.emplace(tk.tokens[i], static_cast<int64_t>(i));
    if (!inserted) {
      throw Error(src + ": key 'model.vocab': token " + Quoted(tk.tokens[i]) + " appears twice (ids " +
                  std::to_string(it->second) + " and " + std::to_string(i) + ")");
    }
  }
  tk.added.assign(n, 0);
  tk.special.assign(n, 0);

  // §TOK.1 Added tokens. Hugging Face's loader does not take the "id" of an
  // added token from the file: it gives the vocab id when the content is a
  // vocab token (or an earlier added token's id for the same content), else
  // the next id after the highest id so far (at least n). A file whose ids
  // disagree loads with other ids than it says (a warning at most), so it is
  // refused; for every file accepted, the declared ids are HF's ids.
  const json empty = json::array();
  const json& added = root.contains("added_tokens") && !root["added_tokens"].is_null() ? root["added_tokens"] : empty;
  if (!added.is_array()) throw Error(src + ": key 'added_tokens': expected an array, got " + std::string(added.type_name()));
  std::unordered_map<std::string, int64_t> added_ids;  // content -> id
  int64_t added_max = -1;
  for (size_t k = 0; k < added.size(); ++k) {
    const json& a = added[k];
    const std::string where = src + ": key 'added_tokens[" + std::to_string(k) + "]'";
    if (!a.is_object()) throw Error(where + ": expected an object");
    if (!a.contains("content") || !a["content"].is_string() || a["content"].get_ref<const std::string&>().empty()) {
      throw Error(where + ": 'content' must be a non-empty string");
    }
    const std::string& content = a["content"].get_ref<const std::string&>();
    if (!a.contains("id") || !a["id"].is_number_unsigned() ||
        a["id"].get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
      throw Error(where + " (" + Quoted(content) + "): 'id' must be an integer in [0, 2^31), got " +
                  (a.contains("id") ? a["id"].dump() : std::string("nothing")));
    }
    const int64_t id = a["id"].get<int64_t>();
    const bool special = a.contains("special") && a["special"].is_boolean() && a["special"].get<bool>();
    const std::string who = where + " " + Quoted(content) + ": id " + std::to_string(id);
    int64_t expected;
    auto seen = added_ids.find(content);
    auto in_vocab = vocab_ids.find(content);
    if (seen != added_ids.end()) {
      expected = seen->second;
      if (id != expected) {
        throw Error(who + ": the same content is already the added token with id " + std::to_string(expected));
      }
    } else if (in_vocab != vocab_ids.end()) {
      expected = in_vocab->second;
      if (id != expected) {
        throw Error(who + ": this content is the vocab token with id " + std::to_string(expected) +
                    ", which is the id the Hugging Face loader gives it");
      }
    } else {
      const int64_t next = added_max < 0 ? static_cast<int64_t>(n)
                                         : (added_max >= static_cast<int64_t>(n) || n == 0 ? added_max + 1
                                                                                           : static_cast<int64_t>(n));
      expected = next;
      if (id < static_cast<int64_t>(tk.tokens.size())) {
        throw Error(who + " is given twice: it is already " + Quoted(tk.tokens[static_cast<size_t>(id)]) +
                    " (duplicate id)");
      }
      if (id != expected) {
        throw Error(who + " leaves a hole: id " + std::to_string(expected) +
                    " has no token (the Hugging Face loader would give this token id " + std::to_string(expected) + ")");
      }
      tk.tokens.push_back(content);
      tk.added.push_back(0);
      tk.special.push_back(0);
    }
    added_ids.emplace(content, expected);
    added_max = std::max(added_max, expected);
    tk.added[static_cast<size_t>(expected)] = 1;
    if (special) tk.special[static_cast<size_t>(expected)] = 1;
  }
  if (tk.tokens.empty()) throw Error(src + ": the tokenizer has no tokens");
  return tk;
}

Tokenizer LoadTokenizerJson(const std::filesystem::path& path) {
  return ParseTokenizerJson(ReadInputFile(path, InputKind::kTokenizer), path.string());
}

// ---------------------------------------------------------------------------
// §TOK.2 Single-id decode

namespace {

// GPT-2's table: printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') stand
// for themselves; the other 68 bytes, in increasing order, get U+0100,
// U+0101, ... so that every byte has a visible, non-space character.
struct ByteTable {
  std::array<char32_t, 256> to_unicode{};
  std::array<int16_t, 0x144> to_byte{};  // -1: not in the table
  ByteTable() {
    to_byte.fill(-1);
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_unicode[static_cast<size_t>(b)] = printable ? static_cast<char32_t>(b) : next++;
      to_byte[to_unicode[static_cast<size_t>(b)]] = static_cast<int16_t>(b);
    }
  }
};

const ByteTable& Table() {
  static const ByteTable table;
  return table;
}

void AppendUtf8(char32_t c, std::string& out) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

bool IsContinuation(uint8_t b) { return b >= 0x80 && b <= 0xBF; }

// The length of the valid UTF-8 sequence at s[i], or -(length of its maximal
// invalid subpart) (at least 1 byte) when it is invalid. Unicode's table of
// well-formed sequences: the second byte's range depends on the first byte.
int Utf8Sequence(std::string_view s, size_t i) {
  const uint8_t b0 = static_cast<uint8_t>(s[i]);
  if (b0 < 0x80) return 1;
  int width;
  uint8_t lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    width = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    width = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    width = 4;
    if (b0 == 0xF0) lo = 0x90;  // no overlong forms
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return -1;  // a continuation byte, C0, C1 or F5..FF: never valid
  }
  for (int k = 1; k < width; ++k) {
    if (i + static_cast<size_t>(k) >= s.size()) return -k;
    const uint8_t b = static_cast<uint8_t>(s[i + static_cast<size_t>(k)]);
    const bool ok = k == 1 ? (b >= lo && b <= hi) : IsContinuation(b);
    if (!ok) return -k;
  }
  return width;
}

}  // namespace

char32_t ByteToUnicode(uint8_t b) { return Table().to_unicode[b]; }

// §TOK.2 HF's ByteLevel decoder: a token all of whose characters are in the
// table becomes those bytes; any other token (e.g. an added token such as
// "<｜User｜>", or a vocab entry with a character outside the table) is
// kept as its own UTF-8 bytes. Added tokens are not special here: one made
// only of table characters (e.g. "Ġx") decodes through the table too.
std::string TokenBytes(std::string_view token) {
  const ByteTable& t = Table();
  std::string bytes;
  bytes.reserve(token.size());
  size_t i = 0;
  while (i < token.size()) {
    const int len = Utf8Sequence(token, i);
    if (len < 0) return std::string(token);  // not UTF-8: not table characters either
    char32_t c;
    const uint8_t b0 = static_cast<uint8_t>(token[i]);
    if (len == 1) {
      c = b0;
    } else if (len == 2) {
      c = (static_cast<char32_t>(b0 & 0x1F) << 6) | (static_cast<uint8_t>(token[i + 1]) & 0x3F);
    } else {
      return std::string(token);  // three or four bytes: above U+07FF, outside the table
    }
    if (c >= t.to_byte.size() || t.to_byte[c] < 0) return std::string(token);
    bytes.push_back(static_cast<char>(t.to_byte[c]));
    i += static_cast<size_t>(len);
  }
  return bytes;
}

// §TOK.2 Rust's String::from_utf8_lossy: each maximal invalid subpart (the
// longest prefix of a well-formed sequence that cannot be completed, or one
// byte that can start none) becomes one U+FFFD.
std::string Utf8Lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() + 2);
  size_t i = 0;
  while (i < bytes.size()) {
    const int len = Utf8Sequence(bytes, i);
    if (len > 0) {
      out.append(bytes.substr(i, static_cast<size_t>(len)));
      i += static_cast<size_t>(len);
    } else {
      out.append("\xEF\xBF\xBD");  // U+FFFD
      i += static_cast<size_t>(-len);
    }
  }
  return out;
}

std::string DecodeToken(std::string_view token) { return Utf8Lossy(TokenBytes(token)); }

// ---------------------------------------------------------------------------
// §TOK.3 Normalizer chain

namespace {

constexpr char32_t kSentinel = 0xE000;

const icu::Normalizer2& Nfkc() {
  static const icu::Normalizer2* n = [] {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* p = icu::Normalizer2::getNFKCInstance(status);
    if (U_FAILURE(status)) throw Error(std::string("ICU NFKC normalizer unavailable: ") + u_errorName(status));
    return p;
  }();
  return *n;
}

const icu::Normalizer2& Nfd() {
  static const icu::Normalizer2* n = [] {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* p = icu::Normalizer2::getNFDInstance(status);
    if (U_FAILURE(status)) throw Error(std::string("ICU NFD normalizer unavailable: ") + u_errorName(status));
    return p;
  }();
  return *n;
}

// §TOK.3 step 4: Rust's char::to_lowercase, one code point at a time. ICU's
// full lowercase of a string holding only that code point is the same
// mapping: with nothing around it, no context-dependent rule applies (a lone
// Σ is not word-final, so it becomes σ); "" is the root locale (no Turkish or
// Lithuanian rules). Lowercasing the whole string at once would turn a
// word-final Σ into ς, which HF does not do.
void AppendLowercase(char32_t c, std::u32string& out) {
  if (c < 0x80) {
    out.push_back(c >= 'A' && c <= 'Z' ? c + 32 : c);
    return;
  }
  if (!u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_CHANGES_WHEN_LOWERCASED)) {
    out.push_back(c);  // most code points (CJK, digits, lowercase letters): nothing to map
    return;
  }
  UChar src[2];
  int32_t n = 0;
  U16_APPEND_UNSAFE(src, n, static_cast<UChar32>(c));
  UChar dst[8];
  UErrorCode status = U_ZERO_ERROR;
  const int32_t len = u_strToLower(dst, 8, src, n, "", &status);
  if (U_FAILURE(status)) throw Error(std::string("ICU lowercase failed: ") + u_errorName(status));
  for (int32_t i = 0; i < len;) {
    UChar32 d;
    U16_NEXT(dst, i, len, d);
    out.push_back(static_cast<char32_t>(d));
  }
}

// Decodes valid UTF-8 `text` into `cps` and tells whether every code point
// is normalization-inert for both NFKC and NFD (a shortcut for steps 1-3).
bool AllInert(std::string_view text, std::u32string& cps) {
  const icu::Normalizer2& nfkc = Nfkc();
  const icu::Normalizer2& nfd = Nfd();
  bool inert = true;
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  const int32_t len = static_cast<int32_t>(text.size());
  for (int32_t i = 0; i < len;) {
    UChar32 c;
    U8_NEXT(p, i, len, c);
    if (c < 0) return false;  // not UTF-8: let ICU deal with it
    cps.push_back(static_cast<char32_t>(c));
    inert = inert && nfkc.isInert(c) && nfd.isInert(c);
  }
  return inert;
}

}  // namespace

std::string NormalizeText(std::string_view text) {
  std::u32string cps;
  cps.reserve(text.size());
  bool ascii = true;
  for (char ch : text) ascii = ascii && static_cast<uint8_t>(ch) < 0x80;
  if (ascii) {
    // ASCII is its own NFKC and NFD and holds no marks: steps 1-3 change
    // nothing, and step 4 is A-Z -> a-z. (A shortcut, not a different rule.)
    for (char ch : text) AppendLowercase(static_cast<uint8_t>(ch), cps);
  } else {
    // Steps 1-2, unless every code point is inert under NFKC and NFD (no
    // decomposition, no composition with a neighbour, combining class 0):
    // then both leave the text as it is (a shortcut, not a different rule).
    std::u32string decomposed;
    if (!AllInert(text, decomposed)) {
      decomposed.clear();
      UErrorCode status = U_ZERO_ERROR;
      const icu::UnicodeString in =
          icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
      const icu::UnicodeString nfkc = Nfkc().normalize(in, status);  // step 1
      const icu::UnicodeString nfd = Nfd().normalize(nfkc, status);  // step 2
      if (U_FAILURE(status)) throw Error(std::string("ICU normalization failed: ") + u_errorName(status));
      for (int32_t i = 0; i < nfd.length();) {
        const UChar32 c = nfd.char32At(i);
        i += U16_LENGTH(c);
        decomposed.push_back(static_cast<char32_t>(c));
      }
    }
    for (char32_t c : decomposed) {
      // step 3: HF StripAccents drops every combining mark: Mn, Mc and Me
      // (Thai and Indic vowel signs included, though some are inert).
      if (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_M_MASK) continue;
      AppendLowercase(c, cps);  // step 4
    }
  }
  // step 5: every run of space, tab, CR, LF becomes one space.
  std::u32string collapsed;
  collapsed.reserve(cps.size());
  bool in_run = false;
  for (char32_t c : cps) {
    const bool blank = c == ' ' || c == '\t' || c == '\r' || c == '\n';
    if (!blank) {
      collapsed.push_back(c);
    } else if (!in_run) {
      collapsed.push_back(' ');
    }
    in_run = blank;
  }
  // step 6: a lone space is protected from step 7 by a private-use sentinel.
  if (collapsed == U" ") collapsed = std::u32string(1, kSentinel);
  // step 7: strip Unicode White_Space (Rust's char::is_whitespace) at both ends.
  size_t b = 0, e = collapsed.size();
  while (b < e && u_isUWhiteSpace(static_cast<UChar32>(collapsed[b]))) ++b;
  while (e > b && u_isUWhiteSpace(static_cast<UChar32>(collapsed[e - 1]))) --e;
  // step 8: the sentinel (and any U+E000 the text had) becomes a space.
  std::string out;
  out.reserve(e - b);
  for (size_t i = b; i < e; ++i) AppendUtf8(collapsed[i] == kSentinel ? U' ' : collapsed[i], out);
  return out;
}

// ---------------------------------------------------------------------------
// §TOK.4 Keys and first-seen ids

std::string_view KeyKindName(KeyKind kind) {
  switch (kind) {
    case KeyKind::kNormalized:
      return "normalized";
    case KeyKind::kText:
      return "text";
    case KeyKind::kToken:
      return "token";
  }
  return "?";
}

TokenKey KeyOf(std::string_view token) {
  TokenKey k;
  k.text = DecodeToken(token);
  k.replacement = k.text.find("\xEF\xBF\xBD") != std::string::npos;
  if (k.replacement) {
    // A partial UTF-8 sequence: its text says nothing, so the raw vocab
    // entry itself is the key (distinct partial sequences stay distinct).
    k.kind = KeyKind::kToken;
    k.key = std::string(token);
    return k;
  }
  k.normalized = NormalizeText(k.text);
  if (k.normalized.empty()) {
    // Only marks or White_Space other than a lone [ \t\r\n] run: keep the text.
    k.kind = KeyKind::kText;
    k.key = k.text;
  } else {
    k.kind = KeyKind::kNormalized;
    k.key = k.normalized;
  }
  return k;
}

TokenMap BuildTokenMap(const Tokenizer& tokenizer, std::vector<TokenKey>* keys,
                       const std::function<void(int64_t, int64_t)>& progress) {
  TokenMap tm;
  tm.source = tokenizer.source;
  const int64_t n = tokenizer.size();
  if (n < 1) throw Error(tokenizer.source + ": the tokenizer has no tokens");
  tm.map.resize(static_cast<size_t>(n));
  if (keys != nullptr) keys->clear();
  // One dictionary for all three kinds of key: a raw token string that
  // equals some other token's normalized text shares its id.
  std::unordered_map<std::string, int64_t> first_seen;
  first_seen.reserve(static_cast<size_t>(n));
  for (int64_t id = 0; id < n; ++id) {
    TokenKey k = KeyOf(tokenizer.tokens[static_cast<size_t>(id)]);
    auto [it, inserted] = first_seen.try_emplace(k.key, static_cast<int64_t>(first_seen.size()));
    tm.map[static_cast<size_t>(id)] = it->second;
    if (keys != nullptr) keys->push_back(std::move(k));
    if (progress && (id + 1) % 8192 == 0) progress(id + 1, n);
  }
  tm.compressed_size = static_cast<int64_t>(first_seen.size());
  tm.size_declared = true;  // §TOK.4 a built map's V is the number of distinct ids
  if (progress) progress(n, n);
  return tm;
}

bool TakeSizeFromConfig(TokenMap& token_map, const EngramConfig& config) {
  // §TOK.5 Only a map silent about its size, and only a configuration that
  // states one: a declared size (or a built map's) is checked against the
  // configuration by CheckTokenMapForConfig, never overridden.
  if (token_map.size_declared || config.profile != Profile::kV41 || !config.compressed_vocab_size) return false;
  const int64_t v = *config.compressed_vocab_size;
  if (v == token_map.compressed_size) return false;
  int64_t max_entry = 0;
  size_t at = 0;
  for (size_t i = 0; i < token_map.map.size(); ++i) {
    if (token_map.map[i] > max_entry) max_entry = token_map.map[i], at = i;
  }
  // The map must still be a function into [0, V).
  if (max_entry >= v) {
    throw Error(config.source + ": key 'engram_compressed_vocab_size': config says " + std::to_string(v) +
                " but the token map of " + token_map.source + " holds compressed id " + std::to_string(max_entry) +
                " (entry " + std::to_string(at) + "; every compressed id must be below V)");
  }
  // A map that was first-seen is still not one a tokenizer builds: ids
  // max + 1 .. V - 1 are never used (§TOK.5 note).
  if (token_map.not_built.empty()) {
    token_map.not_built = "compressed ids " + std::to_string(max_entry + 1) + " .. " + std::to_string(v - 1) +
                          " of V = " + std::to_string(v) + " are never used";
  }
  token_map.compressed_size = v;
  return true;
}

int64_t CheckTokenMapForConfig(const TokenMap& token_map, const EngramConfig& config) {
  // §TOK.4 A different map size reshapes every multiplier bound and so every
  // row: v4.1 states the size, and a map that disagrees is refused.
  if (config.profile == Profile::kV41 && config.compressed_vocab_size &&
      *config.compressed_vocab_size != token_map.compressed_size) {
    throw Error(config.source + ": key 'engram_compressed_vocab_size': config says " +
                std::to_string(*config.compressed_vocab_size) + " but the token map of " + token_map.source +
                " has " + std::to_string(token_map.compressed_size) + " compressed ids");
  }
  return token_map.Lookup(config.pad_id, config.source + ": pad id");
}

}  // namespace engram
