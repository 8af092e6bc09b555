#include "conformance/cli/common.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <sstream>

#include "base/fileio.h"
#include "base/error.h"
#include "reference/fusion.h"

namespace engram::cli {

void AddInputOptions(CLI::App* cmd, Inputs& in, bool config_required) {
  auto* c = cmd->add_option("--config", in.config_path,
                            "config.json (v4.1 HF or inference shape) or a demo-v1 EngramConfig JSON");
  if (config_required) c->required();
  cmd->add_option("--profile", in.profile, "Override the detected profile")->check(CLI::IsMember({"v4.1", "demo-v1"}));
  auto* tm = cmd->add_option("--token-map", in.token_map_path,
                             "Token-map JSON (array, or object with \"map\"); ids given are raw tokenizer ids");
  auto* v = cmd->add_option("--compressed-vocab-size", in.compressed_vocab_size,
                            "No token map: ids given are already compressed, V = this value (1 ... 2^31)");
  // §RNG.4 V >= 1; §TOK.5 a token map's compressed ids are < 2^31, so V <= 2^31.
  v->check(IntIn(1, kMaxCompressedVocabSize, "the size of a token map, whose compressed ids are < 2^31, §TOK.5"));
  tm->excludes(v);
  auto* tk = cmd->add_option("--tokenizer", in.tokenizer_path,
                             "Hugging Face tokenizer.json: build the token map from it (§TOK); ids given are raw ids");
  tk->excludes(tm);
  tk->excludes(v);
}

TokenMap LoadMapFile(const std::string& path, const EngramConfig* config) {
  TokenMap map = LoadTokenMapFile(path);
  // §TOK.5 A map silent about its size takes V from the configuration where
  // the configuration states it.
  const bool from_config = config != nullptr && TakeSizeFromConfig(map, *config);
  // §TOK.5 Any function into [0, V) hashes; one no tokenizer would build
  // (a test fixture, another port's map) is used as given, with a word.
  if (!map.not_built.empty()) {
    std::cerr << "engram: note: " << path << " is not a tokenizer-built map (" << map.not_built
              << "); its compressed ids are used as given, V = " << map.compressed_size
              << (from_config ? " (the map declares no size: V is the config's engram_compressed_vocab_size)" : "")
              << "\n";
  }
  return map;
}

namespace {
std::string& NonStandardNote();
}  // namespace

Loaded Load(const Inputs& in) {
  std::optional<Profile> override_profile;
  if (!in.profile.empty()) override_profile = ParseProfile(in.profile);
  Loaded out;
  out.config = in.config_path.empty() ? V41FlashConfig() : LoadConfig(in.config_path, override_profile);
  int64_t v = 0;
  int64_t pad = out.config.pad_id;
  if (!in.token_map_path.empty() || !in.tokenizer_path.empty()) {
    out.token_map = in.tokenizer_path.empty() ? LoadMapFile(in.token_map_path, &out.config)
                                              : BuildTokenMapFromFile(in.tokenizer_path);
    v = out.token_map->compressed_size;
    pad = out.token_map->Lookup(out.config.pad_id, out.config.source + ": pad id");
  } else if (in.compressed_vocab_size != 0) {
    v = in.compressed_vocab_size;
    // §LAY.4 as BuildLayout checks it, but naming the option rather than a token map.
    if (out.config.profile == Profile::kV41 && out.config.compressed_vocab_size &&
        *out.config.compressed_vocab_size != v) {
      throw Error(out.config.source + ": key 'engram_compressed_vocab_size': config says " +
                  std::to_string(*out.config.compressed_vocab_size) + " but --compressed-vocab-size is " +
                  std::to_string(v));
    }
  } else if (out.config.compressed_vocab_size) {
    v = *out.config.compressed_vocab_size;
  } else {
    throw Error("no compressed vocab size: pass --token-map PATH or --compressed-vocab-size N");
  }
  if (!out.token_map && (pad < 0 || pad >= v)) {
    throw Error(out.config.source + ": pad id " + std::to_string(pad) + " is not a compressed id below " +
                std::to_string(v) + " (without a token map the pad id is used as a compressed id)");
  }
  out.layout = BuildLayout(out.config, v, pad);
  // §LAY.6 an explicit layout is marked in every output: on stderr here, and
  // as "non_standard" in every JSON document Emit() writes.
  if (!out.layout.non_standard.empty()) {
    std::cerr << "engram: note: non-standard " << out.layout.non_standard << "\n";
    NonStandardNote() = out.layout.non_standard;
  }
  return out;
}

namespace {

// Whether text[from..] is a non-empty run of the digits 0-9.
bool DecimalDigits(const std::string& text, size_t from) {
  if (from >= text.size()) return false;
  for (size_t i = from; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
  }
  return true;
}

std::string Quoted(const std::string& text) {
  return "'" + (text.size() > 40 ? text.substr(0, 37) + "..." : text) + "'";
}

}  // namespace

std::optional<int64_t> ParseDecimal(const std::string& text) {
  const bool negative = !text.empty() && text[0] == '-';
  if (!DecimalDigits(text, negative ? 1 : 0)) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno == ERANGE || end != text.c_str() + text.size()) return std::nullopt;
  return static_cast<int64_t>(v);
}

std::optional<uint64_t> ParseDecimalUnsigned(const std::string& text) {
  if (!DecimalDigits(text, 0)) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno == ERANGE || end != text.c_str() + text.size()) return std::nullopt;
  return static_cast<uint64_t>(v);
}

std::vector<int64_t> ParseIntList(const std::string& text, const std::string& option) {
  std::vector<int64_t> out;
  if (text.empty()) return out;  // the empty list
  size_t items = 1;
  for (char c : text) items += c == ',' ? 1 : 0;
  size_t start = 0;
  for (size_t k = 1; k <= items; ++k) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const std::string where = option + ": item " + std::to_string(k) + " of " + std::to_string(items);
    if (item.empty()) {
      const char* hint = k == items ? " (a trailing comma)" : k == 1 ? " (a leading comma)" : " (two commas in a row)";
      throw Error(where + " is empty" + hint + "; items are decimal integers separated by single commas, and " +
                  option + "= (or " + option + " '') is the empty list");
    }
    const std::optional<int64_t> v = ParseDecimal(item);
    if (!v) {
      const bool decimal = DecimalDigits(item, item[0] == '-' ? 1 : 0);
      throw Error(where + " is " + Quoted(item) +
                  (decimal ? ": outside the 64-bit integer range [-9223372036854775808, 9223372036854775807]"
                           : ": not a decimal 64-bit integer (the digits 0-9, optionally after '-'; no '+', "
                             "spaces or other characters)"));
    }
    out.push_back(*v);
    start = comma + 1;
  }
  return out;
}

namespace {

std::string Bounds(const std::string& lo, const std::string& hi, const std::string& why) {
  return "[" + lo + ", " + hi + "]" + (why.empty() ? "" : " (" + why + ")");
}

}  // namespace

CLI::Validator IntIn(int64_t lo, int64_t hi, const std::string& why) {
  const std::string range = Bounds(std::to_string(lo), std::to_string(hi), why);
  return CLI::Validator(
      [lo, hi, range](std::string& input) -> std::string {
        const std::optional<int64_t> v = ParseDecimal(input);
        if (!v || *v < lo || *v > hi) {
          return "must be a decimal integer in " + range + ", got " + Quoted(input);
        }
        return "";
      },
      "INT in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

CLI::Validator UnsignedIn(uint64_t lo, uint64_t hi, const std::string& why) {
  const std::string range = Bounds(std::to_string(lo), std::to_string(hi), why);
  return CLI::Validator(
      [lo, hi, range](std::string& input) -> std::string {
        const std::optional<uint64_t> v = ParseDecimalUnsigned(input);
        if (!v || *v < lo || *v > hi) {
          return "must be a decimal integer in " + range + ", got " + Quoted(input);
        }
        return "";
      },
      "UINT in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

CLI::Validator SecondsIn(double lo, double hi) {
  auto text = [](double x) {
    std::ostringstream os;
    os << x;
    return os.str();
  };
  const std::string range = "[" + text(lo) + ", " + text(hi) + "]";
  return CLI::Validator(
      [lo, hi, range](std::string& input) -> std::string {
        // Plain decimal text only: digits, one '.', an exponent; no sign other than in the exponent, no nan/inf/hex.
        bool ok = !input.empty() && (std::isdigit(static_cast<unsigned char>(input[0])) || input[0] == '.');
        for (size_t i = 0; i < input.size(); ++i) {
          const char c = input[i];
          const bool exponent_sign = (c == '-' || c == '+') && i > 0 && (input[i - 1] == 'e' || input[i - 1] == 'E');
          ok = ok && (std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == 'E' || exponent_sign);
        }
        char* end = nullptr;
        const double v = ok ? std::strtod(input.c_str(), &end) : 0;
        if (!ok || end != input.c_str() + input.size() || !std::isfinite(v) || v < lo || v > hi) {
          return "must be a number of seconds in " + range + ", got " + Quoted(input);
        }
        return "";
      },
      "SECONDS in " + range);  // e.g. "must be a number of seconds in [0.001, 86400], got 'nan'"
}

std::vector<std::string> ExpandEmptyValues(int argc, const char* const* argv) {
  std::vector<std::string> out;
  bool options = true;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") options = false;
    if (options && i > 0 && a.size() > 3 && a.compare(0, 2, "--") == 0 && a.back() == '=' &&
        a.find('=') == a.size() - 1) {
      out.push_back(a.substr(0, a.size() - 1));
      out.emplace_back();
    } else {
      out.push_back(a);
    }
  }
  return out;
}

namespace {
// §LAY.6 What Load() found non-standard about the layout in use ("" when
// standard): every JSON document the command emits says so.
std::string& NonStandardNote() {
  static std::string note;
  return note;
}
}  // namespace

void Emit(const ojson& doc, const std::string& out_path) {
  std::string text;
  if (!NonStandardNote().empty() && doc.is_object()) {
    ojson marked;
    marked["non_standard"] = NonStandardNote();
    for (const auto& [k, v] : doc.items()) marked[k] = v;
    text = marked.dump(1) + "\n";
  } else {
    text = doc.dump(1) + "\n";
  }
  if (out_path.empty()) {
    std::cout << text;
  } else {
    WriteFileAtomic(out_path, text);
  }
}

ojson JsonNumber(double x) { return std::isfinite(x) ? ojson(x) : ojson(FloatHex(x)); }

}  // namespace engram::cli
