// spec/conformance.md §CONF.7 — random cases of the suite token_map (§TOK):
// small byte-level BPE tokenizer.json documents (the shape of the fixed
// vectors' TokenizerDoc: BPE model without merges, ByteLevel pre-tokenizer and
// decoder, no normalizer, added tokens special or not) whose tokens are drawn
// from random Unicode, mapped (TokenMapTest) or used to compress raw ids
// (TokenLookupTest).
//
// The recipe: "kind" ("map" | "lookup"), "vocab" (token specs), "added"
// ({"content": spec, "special"}), and for "map" optionally "padId",
// "sizeCheck" ("right" | "wrong") and "break" (one rule of §TOK.1 broken); for
// "lookup" "profile", "rawIds", optionally "mask", "maskShort" and "beyond".
// A token spec is "b:" + hex bytes (the vocab entry is the byte-level string
// of those bytes, §TOK.2 item 1: any bytes, so also ones that are not UTF-8)
// or "r:" + hex of UTF-8 text (the entry is that text itself, characters
// outside the byte table: it decodes to itself). Raw ids >= 0 in a recipe are
// taken mod T when the case is built, so that a shrink step that removes
// tokens leaves them valid; "beyond" puts T + excess at one position.
//
// Distributions. 1..48 vocab tokens (log-uniform), each of 1..3 pieces, a
// leading space one time in five; one token in four is a variant of an
// earlier one (ASCII case flipped, a combining acute appended, a space before
// or after, ASCII turned full-width: keys that collide after §TOK.3). A piece
// is, uniformly: ASCII (letters of both cases, digits, punctuation); Latin
// letters U+00C0-U+017F and the special cases İ ı ß ẞ ǅ Ω K Å ſ; Greek or
// Cyrillic words (Σ, σ, ς favoured); a combining mark (Mn U+0300-U+036F, Me
// U+20DD-U+20E0, Mc U+0903, U+093F), alone or after a letter; CJK, Hangul,
// kana, half-width katakana; emoji (U+1F300-U+1F64F, skin tones, VS16, ZWJ
// sequences); a whitespace run (space, tab, CR, LF, or exotic White_Space:
// NBSP, U+2028, NEL, VT, FF, U+3000, ZWSP, thin space); compatibility forms
// (ligatures, circled, full-width, super- and subscripts, fractions, Roman
// numerals, squared units); U+E000 (the sentinel), U+FFFD, NUL, DEL, soft
// hyphen; or bytes that are not UTF-8 (a truncated sequence, a lone
// continuation byte, C0 C1 F5-FF, a surrogate, an overlong form, beyond
// U+10FFFF), which decode to U+FFFD. Code points are taken from blocks
// assigned by Unicode 3.0 (emoji 6.0), so that ICU's and the Rust backend's
// Unicode versions agree on them. One token in 16 is an "r:" token. 0..4
// added tokens (none half the time): special-looking <|...|> or <｜...｜>
// contents, a drawn token's byte-level string (AddedTokenByteLevel), a
// drawn text, or an existing vocab entry (it keeps its vocab id); special one
// time in two. Map cases (two in three): one in three with a pad id (one in
// 20 of those = T: refused), one in four with engram_compressed_vocab_size
// (one in four of those wrong: refused); one in 12 breaks §TOK.1 (a vocab
// hole, a duplicate vocab id, an added token declaring an id one too high or
// another token's id). Lookup cases: either profile; 0..24 raw ids (uniform
// below T, T - 1 and 0 favoured, -1 one in 10, demo-v1 negatives one in 10);
// v4.1 a mask one time in two; one case in 20 refused (an id T + excess, a
// v4.1 id below -1, a mask one entry short, a mask given to demo-v1).
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <limits>
#include <set>
#include <span>

#include "base/error.h"
#include "base/hex.h"
#include "reference/config.h"
#include "reference/hash.h"
#include "reference/storage.h"
#include "reference/token_map.h"
#include "vectors/random_cases.h"
#include "vectors/suite.h"
#include "vectors/suite_token_map.h"

namespace engram::vectors {
namespace {


// ------------------------------------------------------------------ bytes and hex

// A recipe spells token bytes in hex ("r:" or "b:" then the digits); a recipe
// read back (engram report merge rebuilds shards' failing cases) must be one
// the generator wrote.
std::string RecipeBytes(std::string_view hex) {
  const std::optional<std::string> bytes = BytesOfHex(hex);
  if (!bytes) throw Error("token_map recipe: '" + std::string(hex) + "' is not lower-case hex bytes");
  return *bytes;
}

void PutUtf8(std::string& out, UChar32 c) {
  icu::UnicodeString u(c);
  u.toUTF8String(out);
}

// A recipe's tokenizer.json and its size (BuildDoc, below).
struct Built {
  std::string text;  // the tokenizer.json
  int64_t vocab = 0, added = 0, bytes = 0, non_ascii = 0;
};
Built BuildDoc(const ojson& r, ojson& recipe_out);

// ------------------------------------------------------------------ draw

UChar32 FromRange(CaseRng& rng, UChar32 lo, UChar32 hi) { return static_cast<UChar32>(rng.In(lo, hi)); }

UChar32 Pick(CaseRng& rng, std::initializer_list<UChar32> set) {
  return *(set.begin() + rng.Below(static_cast<int64_t>(set.size())));
}

UChar32 AsciiChar(CaseRng& rng) {
  switch (rng.Below(4)) {
    case 0: return FromRange(rng, 'A', 'Z');
    case 1: return FromRange(rng, '0', '9');
    case 2: return FromRange(rng, '!', '/');
    default: return FromRange(rng, 'a', 'z');
  }
}

// Bytes that are not well-formed UTF-8 (§TOK.2 item 2: each maximal subpart
// becomes one U+FFFD).
std::string InvalidUtf8(CaseRng& rng) {
  std::string out;
  switch (rng.Below(6)) {
    case 0: {  // a multi-byte character cut short
      std::string whole;
      PutUtf8(whole, rng.Chance(1, 2) ? FromRange(rng, 0x4E00, 0x9FA5) : FromRange(rng, 0x1F300, 0x1F64F));
      out = whole.substr(0, static_cast<size_t>(rng.In(1, static_cast<int64_t>(whole.size()) - 1)));
      break;
    }
    case 1: out.push_back(static_cast<char>(rng.In(0x80, 0xBF))); break;  // a lone continuation byte
    case 2: out.push_back(static_cast<char>(Pick(rng, {0xC0, 0xC1, 0xF5, 0xF8, 0xFE, 0xFF}))); break;
    case 3:  // a surrogate, ED A0..BF xx
      out = "\xED";
      out.push_back(static_cast<char>(rng.In(0xA0, 0xBF)));
      out.push_back(static_cast<char>(rng.In(0x80, 0xBF)));
      break;
    case 4:  // an overlong form, E0 80..9F xx
      out = "\xE0";
      out.push_back(static_cast<char>(rng.In(0x80, 0x9F)));
      out.push_back(static_cast<char>(rng.In(0x80, 0xBF)));
      break;
    default:  // beyond U+10FFFF, F4 90..BF xx xx
      out = "\xF4";
      out.push_back(static_cast<char>(rng.In(0x90, 0xBF)));
      out += "\x80\x80";
      break;
  }
  return out;
}

// One piece of a token's text (see the header for the classes). `valid_only`:
// no bytes that are not UTF-8 (the text of an "r:" token, an added content).
std::string DrawPiece(CaseRng& rng, bool valid_only) {
  std::string out;
  const int64_t kind = rng.Below(valid_only ? 9 : 10);
  const int64_t n = rng.In(1, 3);
  switch (kind) {
    case 0:
      for (int64_t i = 0; i < n; ++i) PutUtf8(out, AsciiChar(rng));
      break;
    case 1:
      for (int64_t i = 0; i < n; ++i) {
        PutUtf8(out, rng.Chance(1, 4) ? Pick(rng, {0x130, 0x131, 0xDF, 0x1E9E, 0x1C5, 0x2126, 0x212A, 0x212B, 0x17F})
                                      : FromRange(rng, 0xC0, 0x17F));
      }
      break;
    case 2: {  // a Greek or Cyrillic word; Greek ends in a sigma one time in two
      const bool greek = rng.Chance(1, 2);
      for (int64_t i = 0; i < n; ++i) PutUtf8(out, greek ? FromRange(rng, 0x391, 0x3C9) : FromRange(rng, 0x410, 0x44F));
      if (greek && rng.Chance(1, 2)) PutUtf8(out, Pick(rng, {0x3A3, 0x3C3, 0x3C2}));
      break;
    }
    case 3: {  // a combining mark, alone or after a letter
      if (rng.Chance(1, 2)) PutUtf8(out, FromRange(rng, 'a', 'z'));
      const int64_t m = rng.Below(4);
      PutUtf8(out, m < 2 ? FromRange(rng, 0x300, 0x36F) : m == 2 ? FromRange(rng, 0x20DD, 0x20E0) : Pick(rng, {0x903, 0x93F}));
      break;
    }
    case 4:
      for (int64_t i = 0; i < n; ++i) {
        const int64_t s = rng.Below(4);
        PutUtf8(out, s == 0   ? FromRange(rng, 0x4E00, 0x9FA5)
                     : s == 1 ? FromRange(rng, 0xAC00, 0xD7A3)
                     : s == 2 ? FromRange(rng, 0x3041, 0x3094)
                              : FromRange(rng, 0xFF66, 0xFF9D));
      }
      break;
    case 5: {  // emoji: a skin tone, VS16, a ZWJ sequence
      PutUtf8(out, FromRange(rng, 0x1F300, 0x1F64F));
      const int64_t m = rng.Below(4);
      if (m == 1) PutUtf8(out, FromRange(rng, 0x1F3FB, 0x1F3FF));
      if (m == 2) PutUtf8(out, 0xFE0F);
      if (m == 3) {
        PutUtf8(out, 0x200D);
        PutUtf8(out, FromRange(rng, 0x1F300, 0x1F64F));
      }
      break;
    }
    case 6: {  // a whitespace run: space, tab, CR, LF, or other White_Space
      const int64_t len = rng.In(1, 4);
      for (int64_t i = 0; i < len; ++i) {
        PutUtf8(out, rng.Chance(3, 4) ? Pick(rng, {' ', '\t', '\r', '\n'})
                                      : Pick(rng, {0xA0, 0x2028, 0x85, 0x0B, 0x0C, 0x3000, 0x200B, 0x2009}));
      }
      break;
    }
    case 7:
      PutUtf8(out, Pick(rng, {0xFB01, 0xFB00, 0x2460, 0x2473, 0xFF21, 0xFF41, 0xFF5A, 0xB2, 0xB3, 0x2082, 0xBD, 0x216B,
                              0x2122, 0x3380, 0x33A1, 0x1D2C}));
      break;
    case 8: PutUtf8(out, Pick(rng, {0xE000, 0xFFFD, 0x00, 0x7F, 0xAD})); break;
    default: out = InvalidUtf8(rng); break;
  }
  return out;
}

std::string DrawText(CaseRng& rng, bool valid_only) {
  std::string out = rng.Chance(1, 5) ? " " : "";
  const int64_t pieces = rng.In(1, 3);
  for (int64_t i = 0; i < pieces; ++i) out += DrawPiece(rng, valid_only);
  return out;
}

// A variant of an earlier token's bytes whose key may collide with it.
std::string Variant(CaseRng& rng, const std::string& bytes) {
  std::string out;
  switch (rng.Below(5)) {
    case 0:
      for (char c : bytes) {  // ASCII letters only, whatever the locale
        const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        out.push_back(letter ? static_cast<char>(c ^ 0x20) : c);
      }
      return out;
    case 1: return bytes + "\xCC\x81";  // U+0301
    case 2: return " " + bytes;
    case 3: return bytes + " ";
    default:
      for (char c : bytes) {
        if (c >= '!' && c <= '~') PutUtf8(out, 0xFF01 + (c - '!'));  // full-width
        else out.push_back(c);
      }
      return out;
  }
}

// The contents of added tokens.
ojson DrawAdded(CaseRng& rng, const ojson& vocab) {
  ojson added = ojson::array();
  if (rng.Chance(1, 2)) return added;
  const int64_t n = rng.In(1, 4);
  for (int64_t i = 0; i < n; ++i) {
    ojson a = ojson::object();
    const int64_t kind = rng.Below(4);
    if (kind == 0) {
      const std::string bar = rng.Chance(1, 2) ? "|" : "\xEF\xBD\x9C";  // | or U+FF5C
      std::string name;
      for (int64_t k = rng.In(1, 6); k > 0; --k) name.push_back(static_cast<char>(rng.In('a', 'z')));
      a["content"] = "r:" + HexOfBytes("<" + bar + name + bar + ">");
    } else if (kind == 1) {
      a["content"] = "b:" + HexOfBytes(DrawText(rng, false));
    } else if (kind == 2) {
      a["content"] = "r:" + HexOfBytes(DrawText(rng, true));
    } else {
      a["content"] = vocab[static_cast<size_t>(rng.Below(static_cast<int64_t>(vocab.size())))];
    }
    a["special"] = rng.Chance(1, 2);
    added.push_back(std::move(a));
  }
  return added;
}

ojson DrawVocab(CaseRng& rng) {
  ojson vocab = ojson::array();
  std::vector<std::string> bytes;
  const int64_t n = rng.Scaled(1, 48);
  for (int64_t i = 0; i < n; ++i) {
    if (rng.Chance(1, 16)) {
      vocab.push_back("r:" + HexOfBytes(DrawText(rng, true)));
      continue;
    }
    std::string b = !bytes.empty() && rng.Chance(1, 4)
                        ? Variant(rng, bytes[static_cast<size_t>(rng.Below(static_cast<int64_t>(bytes.size())))])
                        : DrawText(rng, false);
    bytes.push_back(b);
    vocab.push_back("b:" + HexOfBytes(b));
  }
  return vocab;
}

// Raw ids before they are taken mod T: uniform, T - 1 (as INT64_MAX's
// residue is not T - 1, kInt64Max stands for "the last id"), 0, DEAD, negatives.
ojson DrawRawIds(CaseRng& rng, bool v41) {
  ojson ids = ojson::array();
  const int64_t n = rng.Length(24, 64);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t pick = rng.Below(10);
    if (pick == 0) ids.push_back(-1);
    else if (pick == 1) ids.push_back(0);
    else if (pick == 2) ids.push_back(kInt64Max);
    else if (pick == 3 && !v41) ids.push_back(-rng.Scaled(2, kInt64Max));
    else ids.push_back(rng.Below(1 << 20));
  }
  return ids;
}

ojson DrawTokenMapCase(uint64_t seed, int64_t index) {
  CaseRng rng(seed, "token_map", index);
  ojson r = ojson::object();
  r["kind"] = rng.Chance(2, 3) ? "map" : "lookup";
  r["vocab"] = DrawVocab(rng);
  r["added"] = DrawAdded(rng, r["vocab"]);
  if (r["kind"] == "map") {
    if (rng.Chance(1, 3)) r["padId"] = rng.Chance(1, 20) ? kInt64Max : rng.Below(1 << 20);  // kInt64Max: T itself
    if (rng.Chance(1, 4)) r["sizeCheck"] = rng.Chance(1, 4) ? "wrong" : "right";
    if (rng.Chance(1, 12)) {
      const char* breaks[] = {"vocabHole", "duplicateVocabId", "addedIdTooHigh", "addedIdOfAnother"};
      r["break"] = breaks[rng.Below(4)];
      if (r["break"] != "vocabHole" && r["break"] != "duplicateVocabId") {  // an added token to break
        ojson a = ojson::object();
        a["content"] = "r:" + HexOfBytes("<|brk|>");  // '<', '|' and '>' are in no drawn piece: not in the vocab
        a["special"] = true;
        r["added"].push_back(a);
      }
      ojson unused;
      try {
        BuildDoc(r, unused);
      } catch (const Error&) {
        r.erase("break");  // a duplicate id needs two distinct tokens
      }
    }
    return r;
  }
  const bool v41 = rng.Chance(1, 2);
  r["profile"] = v41 ? "v4.1" : "demo-v1";
  r["rawIds"] = DrawRawIds(rng, v41);
  if (v41 && rng.Chance(1, 2)) {
    ojson mask = ojson::array();
    for (size_t i = 0; i < r["rawIds"].size(); ++i) mask.push_back(!rng.Chance(1, 4));
    r["mask"] = mask;
  }
  if (!r["rawIds"].empty() && rng.Chance(1, 20)) {  // §HASH.1 a raw id that must be refused
    const int64_t how = rng.Below(3);
    if (how == 0 || (how == 1 && !v41)) {
      ojson beyond = ojson::object();  // one draw per statement
      beyond["at"] = rng.Below(static_cast<int64_t>(r["rawIds"].size()));
      beyond["excess"] = rng.Scaled(0, 1 << 30);
      r["beyond"] = beyond;
    } else if (how == 1) {
      r["rawIds"][static_cast<size_t>(rng.Below(static_cast<int64_t>(r["rawIds"].size())))] = -rng.Scaled(2, kInt64Max);
    } else if (v41) {
      if (!r.contains("mask")) r["mask"] = ojson::array();
      r["maskShort"] = true;
    } else {
      r["mask"] = ojson::array({true});
    }
  }
  return r;
}

// ------------------------------------------------------------------ build

// The vocab entry or added content a token spec denotes.
std::string TokenString(const std::string& spec) {
  const std::string bytes = RecipeBytes(std::string_view(spec).substr(2));
  return spec[0] == 'b' ? ByteLevelToken(bytes) : bytes;
}


// The document of a recipe: vocab entries deduplicated (a shrink step may
// make two equal), added tokens with the ids the Hugging Face loader assigns
// (§TOK.1 item 3), then the break applied.
Built BuildDoc(const ojson& r, ojson& recipe_out) {
  Built b;
  std::vector<std::string> vocab;
  std::set<std::string> seen;
  ojson used_vocab = ojson::array();
  for (const ojson& spec : r["vocab"]) {
    const std::string s = TokenString(spec.get<std::string>());
    if (s.empty() || !seen.insert(s).second) continue;
    vocab.push_back(s);
    used_vocab.push_back(spec);
    const std::string raw = RecipeBytes(spec.get<std::string>().substr(2));
    b.bytes += static_cast<int64_t>(raw.size());
    for (unsigned char c : raw) b.non_ascii += c >= 0x80 ? 1 : 0;
  }
  if (vocab.empty()) throw Error("token_map recipe: no vocab token");
  std::vector<AddedToken> added;
  std::set<std::string> contents;
  ojson used_added = ojson::array();
  int64_t next = static_cast<int64_t>(vocab.size());
  for (const ojson& a : r["added"]) {
    const std::string content = TokenString(a["content"].get<std::string>());
    if (content.empty() || !contents.insert(content).second) continue;
    const auto at = std::find(vocab.begin(), vocab.end(), content);
    const int64_t id = at != vocab.end() ? at - vocab.begin() : next++;
    added.push_back({id, content, a["special"].get<bool>()});
    used_added.push_back(a);
  }
  recipe_out["vocab"] = used_vocab;
  recipe_out["added"] = used_added;
  ojson doc = TokenizerDoc(vocab, added);
  const std::string brk = r.value("break", "");
  auto fresh_added = [&]() -> ojson* {  // an added token not in the vocab
    for (ojson& a : doc["added_tokens"]) {
      if (a["id"].get<int64_t>() >= static_cast<int64_t>(vocab.size())) return &a;
    }
    return nullptr;
  };
  if (brk == "vocabHole") {
    doc["model"]["vocab"][vocab.back()] = static_cast<int64_t>(vocab.size());
  } else if (brk == "duplicateVocabId") {
    if (vocab.size() < 2) throw Error("token_map recipe: a duplicate id needs two tokens");
    doc["model"]["vocab"][vocab.back()] = 0;
  } else if (brk == "addedIdTooHigh" || brk == "addedIdOfAnother") {
    ojson* a = fresh_added();
    if (a == nullptr) throw Error("token_map recipe: no added token outside the vocab to break");
    (*a)["id"] = brk == "addedIdTooHigh" ? (*a)["id"].get<int64_t>() + 1 : 0;
  }
  b.text = doc.dump();
  b.vocab = static_cast<int64_t>(vocab.size());
  b.added = static_cast<int64_t>(added.size());
  return b;
}

std::string SizeOf(const ojson& r, const Built& b, int64_t t, const std::string& extra) {
  return std::string(r["kind"] == "map" ? "map" : "lookup " + r["profile"].get<std::string>()) + ", T " +
         std::to_string(t) + " (vocab " + std::to_string(b.vocab) + ", added " + std::to_string(b.added) + "), bytes " +
         std::to_string(b.bytes) + " (" + std::to_string(b.non_ascii) + " non-ASCII)" + extra;
}

RandomCase BuildTokenMapCase(const ojson& r) {
  RandomCase c;
  c.recipe = r;
  const Built b = BuildDoc(r, c.recipe);
  c.measure = 1000000 * (b.vocab + b.added) + 1000 * b.bytes + b.non_ascii;
  if (r["kind"] == "map") {
    c.type = "TokenMapTest";
    c.spec_refs = {"§TOK.1", "§TOK.2", "§TOK.3", "§TOK.4"};
    c.group = ojson::object();
    c.group["type"] = c.type;
    c.group["comment"] = "";
    c.group["tokenizerJson"] = b.text;
    // T and V of the document as it is, for the inputs that refer to them.
    int64_t t = b.vocab + b.added, v = 0;
    ojson plain = TokenMapExpected(b.text, json::object());
    if (plain["result"] == "valid") {
      t = plain["tokens"];
      v = plain["compressedSize"];
    }
    ojson inputs = ojson::object();
    std::string extra;
    if (r.contains("padId")) {
      inputs["padId"] = r["padId"] == kInt64Max ? t : r["padId"].get<int64_t>() % t;
      extra += ", pad id " + inputs["padId"].dump();
      c.measure += 100;
    }
    if (r.contains("sizeCheck") && v > 0) {
      inputs["engramCompressedVocabSize"] = r["sizeCheck"] == "wrong" ? v + 1 : v;
      extra += ", size check " + r["sizeCheck"].get<std::string>();
      c.measure += 100;
    }
    if (r.contains("break")) extra += ", broken: " + r["break"].get<std::string>();
    c.test = inputs;
    const ojson expected = TokenMapExpected(b.text, json::parse(inputs.dump()));
    for (const auto& [k, val] : expected.items()) c.test[k] = val;
    if (r.contains("break") && c.test["result"] != "invalid") throw Error("token_map recipe: the break is accepted");
    c.size = SizeOf(r, b, t, extra);
  } else {
    c.type = "TokenLookupTest";
    c.profile = r["profile"];
    c.spec_refs = {"§HASH.1", "§TOK.4"};
    const bool v41 = c.profile == "v4.1";
    const TokenMap map = BuildTokenMap(ParseTokenizerJson(b.text, "tokenizer.json"));
    const int64_t t = map.tokens();
    std::vector<int64_t> raw;
    for (const ojson& x : r["rawIds"]) {
      const int64_t id = x.get<int64_t>();
      raw.push_back(id == kInt64Max ? t - 1 : id >= 0 ? id % t : id);
      c.measure += 1000 + (id > 0 ? 1 : 0);
    }
    if (r.contains("beyond") && !raw.empty()) {
      raw[r["beyond"]["at"].get<size_t>() % raw.size()] = t + r["beyond"]["excess"].get<int64_t>();
    }
    c.group = ojson::object();
    c.group["type"] = c.type;
    c.group["comment"] = "";
    c.group["tokenizerJson"] = b.text;
    c.group["profile"] = c.profile;
    c.test = ojson::object();
    c.test["rawIds"] = raw;
    if (r.contains("mask")) {
      std::vector<bool> mask = r["mask"].get<std::vector<bool>>();
      mask.resize(raw.size(), true);  // a shrink step may have removed ids
      if (r.value("maskShort", false) && !mask.empty()) mask.pop_back();
      if (!v41 && mask.empty()) mask.push_back(true);  // demo-v1: any mask is refused
      c.test["mask"] = mask;
      c.measure += 10;
    }
    const ojson expected = TokenLookupExpected(map, json::parse(c.test.dump()), v41 ? Profile::kV41 : Profile::kDemoV1);
    for (const auto& [k, val] : expected.items()) c.test[k] = val;
    c.size = SizeOf(r, b, t, ", " + std::to_string(raw.size()) + " raw ids" + (r.contains("mask") ? " with a mask" : ""));
  }
  c.group["comment"] = "random case: " + c.size;
  return c;
}

// ------------------------------------------------------------------ shrink

// Smaller token specs: a byte fewer at either end ("b:" tokens: any bytes
// will do), an "r:" token as the byte-level token of its bytes.
std::vector<std::string> SmallerSpecs(const std::string& spec) {
  std::vector<std::string> out;
  const std::string hex = spec.substr(2);
  if (spec[0] == 'r') {
    out.push_back("b:" + hex);
    return out;
  }
  if (hex.size() > 2) {
    out.push_back("b:" + hex.substr(0, hex.size() - 2));
    out.push_back("b:" + hex.substr(2));
  }
  if (hex != "61") out.push_back("b:61");  // "a": the simplest character
  return out;
}

std::vector<ojson> ShrinkTokenMapCase(const ojson& r) {
  std::vector<ojson> out;
  const ojson& vocab = r["vocab"];
  const size_t n = vocab.size();
  if (n > 1) {  // halves, then a token fewer
    ojson lo = r, hi = r;
    lo["vocab"] = ojson(vocab.begin(), vocab.begin() + static_cast<std::ptrdiff_t>(n / 2));
    hi["vocab"] = ojson(vocab.begin() + static_cast<std::ptrdiff_t>(n / 2), vocab.end());
    out.push_back(lo);
    out.push_back(hi);
    for (size_t i = 0; i < n; ++i) {
      ojson c = r;
      c["vocab"].erase(i);
      out.push_back(c);
    }
  }
  if (!r["added"].empty()) {
    ojson none = r;
    none["added"] = ojson::array();
    out.push_back(none);
    for (size_t i = 0; i < r["added"].size(); ++i) {
      ojson c = r;
      c["added"].erase(i);
      out.push_back(c);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    for (const std::string& s : SmallerSpecs(vocab[i].get<std::string>())) {
      ojson c = r;
      c["vocab"][i] = s;
      out.push_back(c);
    }
  }
  for (size_t i = 0; i < r["added"].size(); ++i) {
    for (const std::string& s : SmallerSpecs(r["added"][i]["content"].get<std::string>())) {
      ojson c = r;
      c["added"][i]["content"] = s;
      out.push_back(c);
    }
  }
  for (const char* k : {"padId", "sizeCheck", "mask", "maskShort", "beyond"}) {
    if (!r.contains(k)) continue;
    ojson c = r;
    c.erase(k);
    out.push_back(c);
  }
  if (r.contains("rawIds")) {
    const ojson& ids = r["rawIds"];
    for (size_t i = 0; i < ids.size(); ++i) {
      ojson c = r;
      c["rawIds"].erase(i);
      out.push_back(c);
      if (ids[i] != 0) {
        ojson z = r;
        z["rawIds"][i] = 0;
        out.push_back(z);
      }
    }
  }
  return out;
}

}  // namespace

RandomSuite RandomTokenMap() {
  return {"token_map", "token_map.schema.json", "ENGRAM-TOKEN-MAP", DrawTokenMapCase, BuildTokenMapCase,
          ShrinkTokenMapCase};
}

}  // namespace engram::vectors
