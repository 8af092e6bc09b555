// Snippet for docs/token_map.md (spec §TOK): decode, normalize and key a few
// tokens of a tiny byte-level BPE tokenizer.json, and the map they give.
#include <cstdio>
#include <string>
#include <vector>

#include "reference/token_map.h"

using namespace engram;

// The byte-level vocab entry of `bytes` (each byte through the GPT-2 table, §TOK.2).
static std::string ByteLevel(const std::string& bytes) {
  std::string out;
  for (unsigned char b : bytes) {
    char32_t c = ByteToUnicode(b);
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else {  // every table character is below U+0800: two UTF-8 bytes
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

static std::string Show(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return "\"" + out + "\"";
}

int main() {
  //! [tokenizer]
  // Vocabulary entries are byte-level strings: " Horse" is stored as "ĠHorse".
  const std::vector<std::string> pieces = {"<pad>", "horse", " Horse", " HORSE", "\xC3\xA9", "e",
                                           "\xE2\x80", "  ", "\n", "\xEF\xBC\xA8orse"};
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t i = 0; i < pieces.size(); ++i) vocab[ByteLevel(pieces[i])] = i;
  const nlohmann::json doc = {
      {"version", "1.0"},
      {"added_tokens", nlohmann::json::array({{{"id", 0}, {"content", "<pad>"}, {"special", true}}})},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}};
  const Tokenizer tokenizer = ParseTokenizerJson(doc.dump(), "tiny-tokenizer.json");
  std::vector<TokenKey> keys;
  const TokenMap map = BuildTokenMap(tokenizer, &keys);
  //! [tokenizer]
  std::printf("id  vocab entry       decoded text   kind         key          compressed\n");
  for (int64_t id = 0; id < tokenizer.size(); ++id) {
    const TokenKey& k = keys[static_cast<size_t>(id)];
    std::printf("%2lld  %-16s  %-13s  %-11s  %-11s  %lld\n", static_cast<long long>(id),
                Show(tokenizer.tokens[static_cast<size_t>(id)]).c_str(), Show(k.text).c_str(),
                std::string(KeyKindName(k.kind)).c_str(), Show(k.key).c_str(),
                static_cast<long long>(map.map[static_cast<size_t>(id)]));
  }
  std::printf("T = %lld raw ids -> V = %lld compressed ids\n", static_cast<long long>(map.tokens()),
              static_cast<long long>(map.compressed_size));
  std::printf("digest (§TOK.6, SHA-256 of int32 LE): %s\n", TokenMapDigest(map).c_str());

  //! [normalize]
  const char* texts[] = {"  Hello\tWorld ", "\xCE\xA3\xCE\x91\xCE\xA3", "caf\xC3\xA9", "\xEF\xAC\x81", " ", "\xC2\xA0"};
  for (const char* t : texts) std::printf("normalize(%s) = %s\n", Show(t).c_str(), Show(NormalizeText(t)).c_str());
  //! [normalize]
  return 0;
}
