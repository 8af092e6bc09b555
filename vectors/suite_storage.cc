// spec/storage.md — suites `fp8_decode`, `table_lookup`, `tp_shard` (§STO.11): generators and verifiers.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "reference/config.h"
#include "base/hex.h"
#include "base/error.h"
#include "reference/layout.h"
#include "reference/storage.h"
#include "vectors/mutants_storage.h"
#include "vectors/suite_storage.h"
#include "vectors/suite.h"

namespace engram::vectors {
namespace {

constexpr int64_t kRows = 384006168;  // layer 1 of DeepSeek-V4.1-Flash (spec/sources.md [SRC-V41-CONFIG])
constexpr int64_t kHeadDim = 256;
constexpr uint64_t kSeed = 20260401;  // the synthetic tables of these suites
const int kWorlds[] = {1, 2, 3, 4, 7, 8, 16, 64};

std::string F32Hex(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return HexOfU32(u);
}

std::string F32RowHex(const std::vector<float>& v) {
  std::string s;
  for (float f : v) s += F32Hex(f);
  return s;
}

// An exact decimal for an E4M3 value (at most 9 fractional binary digits, so
// %.17g prints it exactly); "NaN" for NaN.
std::string ExactText(double v) {
  if (std::isnan(v)) return "NaN";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// ---------------------------------------------------------------------------
// fp8_decode

bool ScaleHasSubnormalOrUnderflow(int s) {
  for (int c = 1; c < 256; ++c) {
    if ((c & 0x7F) == 0 || (c & 0x7F) == 0x7F) continue;
    const uint16_t v = DecodeElement(static_cast<uint8_t>(c), static_cast<uint8_t>(s));
    if ((v & 0x7F80) == 0) return true;  // zero or subnormal from a non-zero code
  }
  return false;
}

bool ScaleOverflows(int s) {
  return s != 0xFF && (DecodeElement(0x7E, static_cast<uint8_t>(s)) & 0x7FFF) == 0x7F80;
}

ojson GenerateFp8() {
  SuiteBuilder b("fp8_decode", "storage.schema.json", "ENGRAM-FP8-DECODE");
  b.Header("Exhaustive FP8 decode: every E4M3fn code, every E8M0 scale, and every (code, scale) pair -> bf16.");
  b.Header("Floats are written as bit patterns in lower-case hex: f32Bits 8 digits; bf16 4 digits per value,");
  b.Header("code 0 first. Any NaN matches any NaN (§STO.9); the reference writes 7fc0.");
  b.Note("NegativeZero", "EDGE_CASE", "Code 0x80 is -0 and stays -0 (bf16 8000) for every finite scale.", "§STO.3");
  b.Note("NaNCode", "EDGE_CASE", "Codes 0x7F and 0xFF are NaN (E4M3fn has no infinities; 0x78 is 256).", "§STO.1");
  AddDecodeBugNote(b, DecodeBug::kE8M0BitShift);
  b.Note("Underflow", "EDGE_CASE",
         "Some products of this scale are bf16 subnormals or round to a signed zero (ties to even).", "§STO.3");
  b.Note("Overflow", "EDGE_CASE", "Some products of this scale reach 2^128 and become +-inf.", "§STO.3");

  size_t ge = b.Group({{"type", "E4M3DecodeTest"}, {"comment", "every E4M3fn code -> its exact value"}});
  for (int c = 0; c < 256; ++c) {
    const float v = DecodeE4M3(static_cast<uint8_t>(c));
    std::vector<std::string> flags;
    if (c == 0x80) flags.push_back("NegativeZero");
    if ((c & 0x7F) == 0x7F) flags.push_back("NaNCode");
    // §VEC.12 computed: a port whose decode has no NaN gives another value (float32 bits, any NaN = any NaN).
    const float finite = E4M3With(DecodeBug::kNaNDecodedFinite, static_cast<uint8_t>(c));
    if (std::isnan(v) != std::isnan(finite) || (!std::isnan(v) && F32Hex(finite) != F32Hex(v))) {
      NoteDecodeBug(b, DecodeBug::kNaNDecodedFinite);
      flags.push_back(DecodeBugFlag(DecodeBug::kNaNDecodedFinite));
    }
    char comment[64];
    std::snprintf(comment, sizeof comment, "code 0x%02x", c);
    b.Test(ge, comment, flags, {"§STO.1"},
           {{"code", c}, {"result", "valid"}, {"f32Bits", F32Hex(std::isnan(v) ? std::nanf("") : v)}, {"value", ExactText(v)}});
  }
  size_t gs = b.Group({{"type", "E8M0DecodeTest"}, {"comment", "every E8M0 scale -> 2^(s-127) as float32"}});
  for (int s = 0; s < 256; ++s) {
    const double v = DecodeE8M0(static_cast<uint8_t>(s));
    // §CONF.4 flagged iff the bit-shift decode gives other float32 bits.
    std::vector<std::string> flags = WithMutantFlags({}, {Mutant::kE8M0BitShift}, [&](Mutant m) {
      return F32Hex(static_cast<float>(MutantE8M0(m, static_cast<uint8_t>(s)))) != F32Hex(static_cast<float>(v));
    });
    for (DecodeBug bug : {DecodeBug::kNaNDecodedFinite, DecodeBug::kE8M0PowInf}) {
      const float decoded = E8M0With(bug, static_cast<uint8_t>(s));
      if (std::isnan(v) != std::isnan(decoded) || (!std::isnan(v) && F32Hex(decoded) != F32Hex(static_cast<float>(v)))) {
        NoteDecodeBug(b, bug);
        flags.push_back(DecodeBugFlag(bug));
      }
    }
    // The other decode bugs leave the scale's float32 alone: FlushToZero flushes
    // in the product only (the conversion is bit-level), Block128 picks scales,
    // NaNRowRefused refuses rows (a scale alone is no row).
    char comment[64];
    std::snprintf(comment, sizeof comment, "scale 0x%02x", s);
    b.Test(gs, comment, flags, {"§STO.2"},
           {{"scale", s}, {"result", "valid"}, {"f32Bits", F32Hex(static_cast<float>(v))},
            {"value", s == 0xFF ? std::string("NaN") : "2^" + std::to_string(s - 127)}});
  }
  size_t gp = b.Group({{"type", "ElementDecodeTest"},
                       {"comment", "one test per scale byte: bf16 of code * 2^(s-127) for codes 0x00 .. 0xff"}});
  for (int s = 0; s < 256; ++s) {
    std::vector<uint16_t> out(256);
    for (int c = 0; c < 256; ++c) out[static_cast<size_t>(c)] = DecodeElement(static_cast<uint8_t>(c), static_cast<uint8_t>(s));
    std::vector<std::string> flags = {"NegativeZero", "NaNCode"};
    // §VEC.12 computed: the codes 0x00 .. 0xff as one row of 256 with eight
    // scales s, decoded as a port with each decode bug decodes it (a port
    // decodes the test as such a row: Block128 cannot change it).
    RowBytes row;
    for (int c = 0; c < 256; ++c) row.codes.push_back(static_cast<uint8_t>(c));
    row.scales.assign(8, static_cast<uint8_t>(s));
    if (DecodeRow(row) != out) throw Error("generator: fp8_decode row decode differs from the element decode");
    for (DecodeBug bug : AllDecodeBugs()) {
      if (!Bf16Differ(DecodeRowWith(bug, row), out)) continue;
      NoteDecodeBug(b, bug);
      flags.push_back(DecodeBugFlag(bug));
    }
    if (s == 0x00 || (s != 0xFF && ScaleHasSubnormalOrUnderflow(s))) flags.push_back("Underflow");
    if (ScaleOverflows(s)) flags.push_back("Overflow");
    char comment[64];
    std::snprintf(comment, sizeof comment, "scale 0x%02x (2^%d)", s, s - 127);
    b.Test(gp, s == 0xFF ? "scale 0xff (NaN)" : comment, flags, {"§STO.1", "§STO.2", "§STO.3"},
           {{"scale", s}, {"result", "valid"}, {"bf16", HexOfU16(out)}});
  }
  return b.Finish();
}

void CheckE4M3(Checker& c, const json&, const json& t) {
  const float v = DecodeE4M3(static_cast<uint8_t>(t.at("code").get<int>()));
  c.Expect(t, "f32Bits", F32Hex(std::isnan(v) ? std::nanf("") : v));
  c.Expect(t, "value", ExactText(v));
}

void CheckE8M0(Checker& c, const json&, const json& t) {
  const int s = t.at("scale").get<int>();
  c.Expect(t, "f32Bits", F32Hex(static_cast<float>(DecodeE8M0(static_cast<uint8_t>(s)))));
  c.Expect(t, "value", s == 0xFF ? std::string("NaN") : "2^" + std::to_string(s - 127));
}

void CheckElement(Checker& c, const json&, const json& t) {
  const int s = t.at("scale").get<int>();
  std::vector<uint16_t> out(256);
  for (int k = 0; k < 256; ++k) out[static_cast<size_t>(k)] = DecodeElement(static_cast<uint8_t>(k), static_cast<uint8_t>(s));
  c.Expect(t, "bf16", HexOfU16(out));
}

// ---------------------------------------------------------------------------
// table_lookup

}  // namespace

ojson TableJson(const std::string& layout, uint64_t seed, int64_t rows, int64_t width, bool edges) {
  ojson t = {{"layout", layout}, {"seed", seed}, {"rows", rows}};
  if (layout == "synthetic") {
    t["headDim"] = width;
    t["edgeRows"] = edges;
  } else {
    t["width"] = width;
  }
  return t;
}

namespace {

// The canonical one-layer safetensors header of §STO.11: weight then scale.
std::string CanonicalHeader(const std::string& prefix, int64_t rows, int64_t head_dim) {
  const int64_t w = rows * head_dim, s = rows * (head_dim / kScaleBlock);
  return "{\"" + prefix + ".weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[" + std::to_string(rows) + "," +
         std::to_string(head_dim) + "],\"data_offsets\":[0," + std::to_string(w) + "]},\"" + prefix +
         ".scale\":{\"dtype\":\"F8_E8M0\",\"shape\":[" + std::to_string(rows) + "," +
         std::to_string(head_dim / kScaleBlock) + "],\"data_offsets\":[" + std::to_string(w) + "," +
         std::to_string(w + s) + "]}}";
}

std::vector<int64_t> EdgeRowIds(uint64_t seed, int64_t from, size_t n) {
  std::vector<int64_t> ids;
  for (int64_t r = from; ids.size() < n; ++r) {
    if (SyntheticIsEdgeRow(seed, r)) ids.push_back(r);
  }
  return ids;
}

// For the byte-layout groups: the rows' bytes and where they sit in the file.
ojson RowBytesJson(const RowSource& src, const std::vector<int64_t>& ids, const std::string& layout, int64_t data_at) {
  ojson out = ojson::array();
  const int64_t d = src.head_dim(), ns = d / kScaleBlock;
  for (int64_t id : ids) {
    const RowBytes r = src.Row(id);
    if (layout == "packed") {
      std::vector<uint8_t> packed = r.codes;
      packed.insert(packed.end(), r.scales.begin(), r.scales.end());
      out.push_back({{"offset", id * (d + ns)}, {"packed", HexOfBytes(packed)}});
    } else {
      out.push_back({{"codesOffset", data_at + id * d},
                     {"scalesOffset", data_at + src.rows() * d + id * ns},
                     {"codes", HexOfBytes(r.codes)},
                     {"scales", HexOfBytes(r.scales)}});
    }
  }
  return out;
}

ojson GenerateLookup() {
  SuiteBuilder b("table_lookup", "storage.schema.json", "ENGRAM-TABLE-LOOKUP");
  b.Header("Table lookup: row ids -> decoded rows, for tables of the real DeepSeek-V4.1-Flash size (384006168 rows");
  b.Header("of 256 E4M3fn codes + 8 E8M0 scales) in three layouts: synthetic (rows from (seed, row), §STO.5),");
  b.Header("safetensors and packed (the looked-up rows' bytes are given with their file offsets). rows[i] is the");
  b.Header("bf16 row of rowIds[i], 4 hex digits per element. demo-v1: a synthetic float32 table, 8 hex digits each.");
  b.Note("EdgeRow", "EDGE_CASE",
         "A synthetic edge row: raw codes and scales, including NaN codes, scales 0x00/0xFF, underflow.", "§STO.5");
  b.Note("Offset64", "EDGE_CASE",
         "The row lies beyond 2^32 bytes into the file: 32-bit offset arithmetic wraps around.", "§STO.4");
  b.Note("LastRow", "EDGE_CASE", "Row 0 and the last row of the table.", "§STO.6");
  b.Note("RowOutOfRange", "INVALID_INPUT", "A row id outside [0, rows) must be refused.", "§STO.6");

  auto src = SyntheticTable(kSeed, kRows, kHeadDim, false);
  auto edge_src = SyntheticTable(kSeed, kRows, kHeadDim, true);
  const std::vector<int64_t> ends = {0, 1, kRows - 1};
  const std::vector<int64_t> far = {16777259, 200000000, 383999999};  // beyond 2^32 bytes for rows > 16777216
  const std::vector<int64_t> edges = EdgeRowIds(kSeed, 1000, 6);

  auto flags_of = [&](const RowSource& s, const std::vector<int64_t>& ids, bool offset64) {
    std::set<std::string> f;
    for (int64_t id : ids) {
      const RowBytes r = s.Row(id);
      // §VEC.12 computed: flagged iff a port with the decode bug decodes one of
      // the rows to other bf16 values (any NaN matching any NaN, §STO.9). The
      // intermediate codes and scales do not depend on the decode.
      for (DecodeBug bug : AllDecodeBugs()) {
        if (!Bf16Differ(DecodeRowWith(bug, r), DecodeRow(r))) continue;
        NoteDecodeBug(b, bug);
        f.insert(DecodeBugFlag(bug));
      }
      if (id == 0 || id == s.rows() - 1) f.insert("LastRow");
      if (offset64 && id * s.head_dim() >= (int64_t{1} << 32)) f.insert("Offset64");
    }
    return std::vector<std::string>(f.begin(), f.end());
  };
  auto rows_hex = [](const RowSource& s, const std::vector<int64_t>& ids) {
    ojson out = ojson::array();
    for (int64_t id : ids) out.push_back(HexOfU16(DecodeRow(s.Row(id))));
    return out;
  };

  for (bool with_edges : {false, true}) {
    const RowSource& s = with_edges ? *edge_src : *src;
    size_t g = b.Group({{"type", "SyntheticLookupTest"},
                        {"comment", with_edges ? "synthetic table with edge rows (one in 8)" : "synthetic table, ordinary rows only"},
                        {"table", TableJson("synthetic", kSeed, kRows, kHeadDim, with_edges)}});
    auto add = [&](const std::vector<int64_t>& ids, const std::string& comment, std::vector<std::string> extra) {
      std::vector<std::string> flags = flags_of(s, ids, false);
      flags.insert(flags.end(), extra.begin(), extra.end());
      std::sort(flags.begin(), flags.end());
      ojson codes = ojson::array(), scales = ojson::array(), kinds = ojson::array();
      for (int64_t id : ids) {
        const RowBytes r = s.Row(id);
        codes.push_back(HexOfBytes(r.codes));
        scales.push_back(HexOfBytes(r.scales));
        kinds.push_back(with_edges && SyntheticIsEdgeRow(kSeed, id));
      }
      b.Test(g, comment, flags, {"§STO.3", "§STO.5", "§STO.6"},
             {{"rowIds", ids}, {"result", "valid"}, {"rows", rows_hex(s, ids)},
              {"intermediate", {{"codes", codes}, {"scales", scales}, {"edgeRow", kinds}}}});
    };
    add(ends, "rows 0, 1 and the last row", {});
    add(far, "rows deep into the table", {});
    add({5, 5, 0}, "repeated ids", {});
    if (with_edges) add(edges, "edge rows", {"EdgeRow"});
    for (int64_t bad : {kRows, int64_t{-1}}) {
      const std::vector<int64_t> ids = {0, bad};
      ojson fields = {{"rowIds", ids}, {"result", "invalid"}};
      try {
        LookupRows(s, ids);
      } catch (const Error& e) {
        fields["error"] = e.what();
      }
      std::vector<std::string> flags = {"RowOutOfRange"};
      // §VEC.12 computed: the official lookup's mask accepts the ids (a row of +0), the reference refuses.
      if (LookupMaskingOutside(s, ids, 1).size() == ids.size() * static_cast<size_t>(kHeadDim)) {
        NoteRowOutsideZeroed(b);
        flags.push_back(kRowOutsideFlag);
      }
      b.Test(g, "row id " + std::to_string(bad) + " is outside the table", flags, {"§STO.6"}, fields);
    }
  }

  // Byte layouts: the bytes of the edge-row synthetic table at those rows.
  const std::string prefix = "layers.1.engram.embed";
  const std::string header = CanonicalHeader(prefix, kRows, kHeadDim);
  const int64_t data_at = 8 + static_cast<int64_t>(header.size());
  for (const std::string layout : {"safetensors", "packed"}) {
    ojson group = {{"type", layout == "packed" ? "PackedLookupTest" : "SafetensorsLookupTest"},
                   {"comment", layout == "packed" ? "packed rows: 256 codes then 8 scales, 264 bytes per row"
                                                  : "one layer's two tensors in a safetensors file (header given)"},
                   {"rows", kRows},
                   {"headDim", kHeadDim}};
    if (layout == "packed") {
      group["rowLength"] = kHeadDim + kHeadDim / kScaleBlock;
    } else {
      group["tensors"] = {{"weight", prefix + ".weight"}, {"scale", prefix + ".scale"}};
      group["header"] = header;
      group["dataOffset"] = data_at;
    }
    group["bytesFrom"] = TableJson("synthetic", kSeed, kRows, kHeadDim, true);
    size_t g = b.Group(group);
    for (const auto& [ids, comment] : std::vector<std::pair<std::vector<int64_t>, std::string>>{
             {ends, "rows 0, 1 and the last row"}, {far, "rows deep into the table"}, {edges, "edge rows"}}) {
      std::vector<std::string> flags = flags_of(*edge_src, ids, true);
      if (ids == edges) flags.push_back("EdgeRow");
      std::sort(flags.begin(), flags.end());
      b.Test(g, comment, flags, {"§STO.3", "§STO.4", "§STO.6"},
             {{"rowIds", ids}, {"rowBytes", RowBytesJson(*edge_src, ids, layout, data_at)}, {"result", "valid"},
              {"rows", rows_hex(*edge_src, ids)}});
    }
  }

  // demo-v1: float32 rows, n_embed_per_ngram / n_head_per_ngram = 64 wide.
  const Layout demo = BuildLayout(DemoV1Config(), 129280, 2);
  const int64_t demo_rows = demo.layers[0].num_embeddings;
  const int64_t width = DemoV1Config().head_dim;
  auto fsrc = SyntheticFloatTable(kSeed, demo_rows, width);
  size_t gf = b.Group({{"type", "FloatLookupTest"},
                       {"comment", "demo-v1 layer " + std::to_string(demo.layers[0].layer_id) +
                                       ": synthetic float32 multi-head embedding table"},
                       {"profile", "demo-v1"},
                       {"table", TableJson("synthetic-float", kSeed, demo_rows, width, false)}});
  for (const std::vector<int64_t>& ids : {std::vector<int64_t>{0, 1, demo_rows - 1}, std::vector<int64_t>{646411, 1000000}}) {
    ojson rows = ojson::array();
    for (int64_t id : ids) rows.push_back(F32RowHex(fsrc->Row(id)));
    b.Test(gf, "float rows", ids.front() == 0 ? std::vector<std::string>{"LastRow"} : std::vector<std::string>{},
           {"§STO.10"}, {{"rowIds", ids}, {"result", "valid"}, {"rows", rows}});
  }
  {
    const std::vector<int64_t> ids = {demo_rows};
    ojson fields = {{"rowIds", ids}, {"result", "invalid"}};
    try {
      LookupFloatRows(*fsrc, ids);
    } catch (const Error& e) {
      fields["error"] = e.what();
    }
    b.Test(gf, "row id = rows is outside the table", {"RowOutOfRange"}, {"§STO.10"}, fields);
  }
  return b.Finish();
}

std::unique_ptr<RowSource> GroupTable(const json& t) {
  if (t.at("layout") != "synthetic") throw Error("unknown table layout " + t.at("layout").dump());
  return SyntheticTable(t.at("seed").get<uint64_t>(), t.at("rows").get<int64_t>(), t.at("headDim").get<int64_t>(),
                        t.at("edgeRows").get<bool>());
}

void CheckSyntheticLookup(Checker& c, const json& g, const json& t) {
  auto src = GroupTable(g.at("table"));
  const std::vector<int64_t> ids = t.at("rowIds").get<std::vector<int64_t>>();
  try {
    const std::vector<uint16_t> v = LookupRows(*src, ids);
    if (!IsValid(t)) return c.Problem(t, "the reference accepts row ids the vector marks invalid");
    json rows = json::array(), codes = json::array(), scales = json::array(), kinds = json::array();
    const size_t d = static_cast<size_t>(src->head_dim());
    for (size_t i = 0; i < ids.size(); ++i) {
      rows.push_back(HexOfU16(std::span<const uint16_t>(v.data() + i * d, d)));
      const RowBytes r = src->Row(ids[i]);
      codes.push_back(HexOfBytes(r.codes));
      scales.push_back(HexOfBytes(r.scales));
      kinds.push_back(g["table"]["edgeRows"].get<bool>() && SyntheticIsEdgeRow(g["table"]["seed"].get<uint64_t>(), ids[i]));
    }
    c.Expect(t, "rows", rows);
    c.Expect(t, "intermediate", json{{"codes", codes}, {"scales", scales}, {"edgeRow", kinds}});
  } catch (const Error& e) {
    if (IsValid(t)) c.Problem(t, std::string("the reference refuses a valid test: ") + e.what());
  }
}

std::vector<uint8_t> HexBytes(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
  return out;
}

void CheckBytesLookup(Checker& c, const json& g, const json& t) {
  const bool packed = g.at("type") == "PackedLookupTest";
  const int64_t rows = g.at("rows"), d = g.at("headDim"), ns = d / kScaleBlock;
  const std::vector<int64_t> ids = t.at("rowIds").get<std::vector<int64_t>>();
  auto src = GroupTable(g.at("bytesFrom"));
  if (!packed) {  // the canonical header of §STO.11
    c.Same(t, "group header", g.at("header"), CanonicalHeader(g["tensors"]["weight"].get<std::string>().substr(
                                                  0, g["tensors"]["weight"].get<std::string>().size() - 7), rows, d));
  }
  const int64_t data_at = packed ? 0 : g.at("dataOffset").get<int64_t>();
  if (!packed) c.Same(t, "group dataOffset (8 + the header length)", data_at, 8 + static_cast<int64_t>(g.at("header").get<std::string>().size()));
  json expect_bytes = json::parse(RowBytesJson(*src, ids, packed ? "packed" : "safetensors", data_at).dump());
  c.Expect(t, "rowBytes", expect_bytes);
  // The expected rows are the decode of the bytes given (not of the source).
  json decoded = json::array();
  for (const json& rb : t.at("rowBytes")) {
    RowBytes r;
    if (packed) {
      const std::vector<uint8_t> all = HexBytes(rb.at("packed"));
      r.codes.assign(all.begin(), all.begin() + d);
      r.scales.assign(all.begin() + d, all.begin() + d + ns);
    } else {
      r.codes = HexBytes(rb.at("codes"));
      r.scales = HexBytes(rb.at("scales"));
    }
    decoded.push_back(HexOfU16(DecodeRow(r)));
  }
  c.Expect(t, "rows", decoded);
}

void CheckFloatLookup(Checker& c, const json& g, const json& t) {
  const json& tb = g.at("table");
  auto src = SyntheticFloatTable(tb.at("seed").get<uint64_t>(), tb.at("rows").get<int64_t>(), tb.at("width").get<int64_t>());
  const std::vector<int64_t> ids = t.at("rowIds").get<std::vector<int64_t>>();
  try {
    const std::vector<float> v = LookupFloatRows(*src, ids);
    if (!IsValid(t)) return c.Problem(t, "the reference accepts row ids the vector marks invalid");
    json rows = json::array();
    const size_t w = static_cast<size_t>(src->width());
    for (size_t i = 0; i < ids.size(); ++i) rows.push_back(F32RowHex(std::vector<float>(v.begin() + static_cast<std::ptrdiff_t>(i * w), v.begin() + static_cast<std::ptrdiff_t>((i + 1) * w))));
    c.Expect(t, "rows", rows);
  } catch (const Error& e) {
    if (IsValid(t)) c.Problem(t, std::string("the reference refuses a valid test: ") + e.what());
  }
}

// ---------------------------------------------------------------------------
// tp_shard

}  // namespace

ojson ShardsJson(int64_t rows, int world) {
  ojson out = ojson::array();
  for (int r = 0; r < world; ++r) {
    const Shard s = RowShard(rows, r, world);
    out.push_back({s.begin, s.end});
  }
  return out;
}

ojson OwnersJson(int64_t rows, int world, const std::vector<int64_t>& ids) {
  ojson out = ojson::array();
  for (int64_t id : ids) {
    const int r = OwnerRank(rows, world, id);
    out.push_back({{"rank", r}, {"localRow", id - RowShard(rows, r, world).begin}});
  }
  return out;
}

std::vector<uint16_t> Reduced(const RowSource& s, const std::vector<int64_t>& ids, int world) {
  std::vector<std::vector<uint16_t>> parts;
  for (int r = 0; r < world; ++r) parts.push_back(ShardLookup(s, ids, r, world));
  return ReduceShards(parts);
}

ojson RowsHex(const std::vector<uint16_t>& v, size_t d) {
  ojson out = ojson::array();
  for (size_t i = 0; i < v.size(); i += d) out.push_back(HexOfU16(std::span<const uint16_t>(v.data() + i, d)));
  return out;
}

namespace {

// The first row at or after `from` whose decode has a -0 element.
int64_t NegZeroRow(const RowSource& s, int64_t from) {
  for (int64_t r = from;; ++r) {
    for (uint16_t v : DecodeRow(s.Row(r))) {
      if (v == 0x8000) return r;
    }
  }
}

// The shard bugs a row-sharded port is checked against (§VEC.12).
constexpr ShardBug kShardBugs[] = {ShardBug::kLocalAsGlobal, ShardBug::kKeepNegZero, ShardBug::kEvenShardsOnly};

void AddTpNotes(SuiteBuilder& b) {
  b.Header("Tensor-parallel lookup of a real-size v4.1 table (synthetic, §STO.5). Row sharding: rank r owns rows");
  b.Header("[r*part, (r+1)*part), part = ceil(rows/world); each rank zeroes (+0) the rows it does not own and the");
  b.Header("partials are summed in bf16 (all_reduce): rows[i] is that sum. Head sharding: rank r looks up columns");
  b.Header("[r*hp, (r+1)*hp), hp = ceil(24/world), and the ranks' outputs are gathered along the head axis.");
  b.Note("ShardBoundary", "EDGE_CASE", "First and last row of every shard, row 0 and the table's last row.", "§STO.7");
  b.Note("ShortLastShard", "EDGE_CASE", "rows is not a multiple of world: the last shard is shorter.", "§STO.7");
  for (ShardBug bug : kShardBugs) AddShardBugNote(b, bug);
  b.Note("NegativeZeroKept", "EDGE_CASE",
         "The expected rows hold -0 elements, kept: at world 1 nothing is reduced, and head sharding gathers (adds "
         "nothing). After a row-sharded all_reduce (world >= 2) every -0 is +0.",
         "§STO.7");
  b.Note("RowOutOfRange", "INVALID_INPUT", "A row id outside [0, rows) must be refused, not masked away.", "§STO.6");
}

// A lookup pipeline with an optional planted shard bug and decode bug.
using TpPort = std::function<std::vector<uint16_t>(std::optional<ShardBug>, std::optional<DecodeBug>)>;

// §VEC.12 computed: a shard or decode bug's flag iff a port with it gives
// other rows. The decode bugs change nothing here as long as the scales are
// 110 ... 130 (§STO.5, no edge rows: (s << 23) is exactly 2^(s-127), no
// subnormal product), except Block128.
std::vector<std::string> ComputedFlags(SuiteBuilder& b, std::vector<std::string> flags,
                                       const std::vector<uint16_t>& expected, const TpPort& port, bool row_sharded) {
  if (Bf16Differ(port(std::nullopt, std::nullopt), expected)) throw Error("generator: tp_shard mutant pipeline differs");
  if (row_sharded) {
    for (ShardBug bug : kShardBugs) {
      if (Bf16Differ(port(bug, std::nullopt), expected)) flags.push_back(ShardBugFlag(bug));
    }
  }
  for (DecodeBug bug : AllDecodeBugs()) {
    if (!Bf16Differ(port(std::nullopt, bug), expected)) continue;
    NoteDecodeBug(b, bug);
    flags.push_back(DecodeBugFlag(bug));
  }
  if (std::find(expected.begin(), expected.end(), 0x8000) != expected.end()) flags.push_back("NegativeZeroKept");
  std::sort(flags.begin(), flags.end());
  return flags;
}

// §STO.7 Row sharding, one group per world size.
void AddRowShardGroups(SuiteBuilder& b, const RowSource& src, int64_t neg_row) {
  for (int world : kWorlds) {
    const int64_t part = ShardPart(kRows, world);
    size_t g = b.Group({{"type", "RowShardTest"},
                        {"comment", "world " + std::to_string(world) + ", part " + std::to_string(part)},
                        {"table", TableJson("synthetic", kSeed, kRows, kHeadDim, false)},
                        {"world", world},
                        {"part", part},
                        {"shards", ShardsJson(kRows, world)}});
    std::vector<int64_t> ids = {0, kRows - 1};
    for (int r = 0; r < world; ++r) {
      const Shard s = RowShard(kRows, r, world);
      if (s.end == s.begin) continue;
      ids.push_back(s.begin);
      ids.push_back(s.end - 1);
    }
    auto add = [&](const std::vector<int64_t>& test_ids, const std::string& comment, std::vector<std::string> flags) {
      const std::vector<uint16_t> whole = LookupRows(src, test_ids);
      const std::vector<uint16_t> reduced = Reduced(src, test_ids, world);
      flags = ComputedFlags(b, flags, reduced,
                             [&](std::optional<ShardBug> bug, std::optional<DecodeBug> decode) {
                               return RowShardLookupWith(bug, decode, src, test_ids, world);
                             },
                             true);
      // The intermediate unsharded rows (compared when a port returns them)
      // change under a decode bug only where the rows do.
      for (DecodeBug bug : AllDecodeBugs()) {
        if (Bf16Differ(LookupRowsWith(bug, src, test_ids), whole) &&
            std::find(flags.begin(), flags.end(), DecodeBugFlag(bug)) == flags.end()) {
          throw Error("generator: tp_shard: " + DecodeBugFlag(bug) + " changes only the intermediate rows");
        }
      }
      b.Test(g, comment, flags, {"§STO.6", "§STO.7"},
             {{"rowIds", test_ids}, {"result", "valid"}, {"rows", RowsHex(reduced, kHeadDim)},
              {"intermediate", {{"owners", OwnersJson(kRows, world, test_ids)}, {"unsharded", RowsHex(whole, kHeadDim)}}}});
    };
    std::vector<std::string> flags = {"ShardBoundary"};
    if (kRows % world != 0) flags.push_back("ShortLastShard");
    add(ids, "boundary rows of every shard", flags);
    add({neg_row}, world == 1 ? "a row with -0 elements: world 1 has no all_reduce, -0 stays"
                              : "a row with -0 elements: the all_reduce turns them +0", {});
    const std::vector<int64_t> bad = {0, kRows};
    ojson fields = {{"rowIds", bad}, {"result", "invalid"}};
    try {
      ShardLookup(src, bad, 0, world);
    } catch (const Error& e) {
      fields["error"] = e.what();
    }
    std::vector<std::string> bad_flags = {"RowOutOfRange"};
    if (LookupMaskingOutside(src, bad, world).size() == bad.size() * static_cast<size_t>(kHeadDim)) {  // §VEC.12
      NoteRowOutsideZeroed(b);
      bad_flags.push_back(kRowOutsideFlag);
    }
    b.Test(g, "row id = rows", bad_flags, {"§STO.6", "§STO.7"}, fields);
  }
}

// §STO.8 Head sharding of one position's 24 columns, one group per world size.
void AddHeadShardGroups(SuiteBuilder& b, const RowSource& src, int64_t neg_row) {
  for (int world : kWorlds) {
    ojson ranges = ojson::array();
    for (int r = 0; r < world; ++r) {
      const HeadRange h = HeadShard(24, r, world);
      ranges.push_back({h.begin, h.end});
    }
    size_t g = b.Group({{"type", "HeadShardTest"},
                        {"comment", "world " + std::to_string(world) + ", " + std::to_string((24 + world - 1) / world) +
                                        " heads per rank"},
                        {"table", TableJson("synthetic", kSeed, kRows, kHeadDim, false)},
                        {"world", world},
                        {"columns", 24},
                        {"headRanges", ranges}});
    InputRng rng(0x54500000 + static_cast<uint64_t>(world));
    std::vector<int64_t> ids;
    for (int c = 0; c < 24; ++c) ids.push_back(rng.Below(kRows));
    ids[static_cast<size_t>(world % 24)] = neg_row;
    std::vector<std::vector<uint16_t>> parts;
    for (int r = 0; r < world; ++r) parts.push_back(HeadShardLookup(src, ids, 24, r, world));
    const std::vector<uint16_t> gathered = GatherHeads(parts, 1, 24, world, kHeadDim);
    // A gather has no all_reduce and no local ids: only the decode bugs reach it.
    const std::vector<std::string> flags =
        ComputedFlags(b, {}, gathered,
                       [&](std::optional<ShardBug>, std::optional<DecodeBug> decode) {
                         return HeadShardLookupWith(decode, src, ids, 24, world);
                       },
                       false);
    b.Test(g, "one position's 24 rows; column " + std::to_string(world % 24) + " has -0 elements (kept)", flags,
           {"§STO.6", "§STO.8"}, {{"rowIds", ids}, {"result", "valid"}, {"rows", RowsHex(gathered, kHeadDim)}});
  }
}

void AddHeadShardShapes(SuiteBuilder& b, const RowSource& src, int64_t neg_row) {
  // §STO.8 the general shape: P positions of C columns, position-major
  // (rowIds[p * C + c]), as the random cases draw them (§CONF.7): several
  // positions, column counts that the world does not divide, and more ranks
  // than columns (ranks that own nothing). Appended after the 24-column
  // groups so that their tcIds stay.
  struct Shape {
    int world;
    int positions;
    int columns;
    const char* why;
  };
  const Shape shapes[] = {
      {2, 3, 24, "3 positions of 24 columns (a prefill chunk), world 2"},
      {3, 2, 5, "2 positions of 5 columns, world 3: the last rank holds 1 column"},
      {4, 3, 1, "3 positions of 1 column, world 4: ranks 1-3 own nothing"},
      {64, 1, 32, "1 position of 32 columns, world 64: ranks 32-63 own nothing"},
  };
  for (const Shape& sh : shapes) {
    ojson ranges = ojson::array();
    for (int r = 0; r < sh.world; ++r) {
      const HeadRange h = HeadShard(sh.columns, r, sh.world);
      ranges.push_back({h.begin, h.end});
    }
    size_t g = b.Group({{"type", "HeadShardTest"},
                        {"comment", std::string("world ") + std::to_string(sh.world) + ", " +
                                        std::to_string(sh.columns) + " columns per position"},
                        {"table", TableJson("synthetic", kSeed, kRows, kHeadDim, false)},
                        {"world", sh.world},
                        {"columns", sh.columns},
                        {"headRanges", ranges}});
    InputRng rng(0x54510000 + static_cast<uint64_t>(sh.world * 100 + sh.columns));
    std::vector<int64_t> ids;
    for (int i = 0; i < sh.positions * sh.columns; ++i) ids.push_back(rng.Below(kRows));
    ids.back() = neg_row;
    std::vector<std::vector<uint16_t>> parts;
    for (int r = 0; r < sh.world; ++r) parts.push_back(HeadShardLookup(src, ids, sh.columns, r, sh.world));
    const std::vector<uint16_t> gathered = GatherHeads(parts, sh.positions, sh.columns, sh.world, kHeadDim);
    const std::vector<std::string> flags =
        ComputedFlags(b, {}, gathered,
                       [&](std::optional<ShardBug>, std::optional<DecodeBug> decode) {
                         return HeadShardLookupWith(decode, src, ids, sh.columns, sh.world);
                       },
                       false);
    b.Test(g, sh.why, flags, {"§STO.6", "§STO.8"},
           {{"rowIds", ids}, {"result", "valid"}, {"rows", RowsHex(gathered, kHeadDim)}});
  }
}

// §STO.7 The real layer-14 table (384,016,682 rows, spec/layout.md) at world 4
// and 8, where rows % world = 2: the last shard is two rows short, and a
// port must still answer (a port that requires equal shards refuses it:
// ShardsMustDivide). Appended after the other groups so that their tcIds stay.
void AddShortLastShardGroups(SuiteBuilder& b) {
  constexpr int64_t kLayer14Rows = 384016682;
  auto src = SyntheticTable(kSeed, kLayer14Rows, kHeadDim, false);
  for (int world : {4, 8}) {
    const int64_t part = ShardPart(kLayer14Rows, world);
    const size_t g = b.Group({{"type", "RowShardTest"},
                              {"comment", "the layer-14 table, world " + std::to_string(world) + ", part " +
                                              std::to_string(part) + ": the last shard is " +
                                              std::to_string(world * part - kLayer14Rows) + " rows short"},
                              {"table", TableJson("synthetic", kSeed, kLayer14Rows, kHeadDim, false)},
                              {"world", world},
                              {"part", part},
                              {"shards", ShardsJson(kLayer14Rows, world)}});
    std::vector<int64_t> ids = {0, kLayer14Rows - 1};
    for (int r = 0; r < world; ++r) {
      const Shard s = RowShard(kLayer14Rows, r, world);
      ids.push_back(s.begin);
      ids.push_back(s.end - 1);
    }
    const std::vector<uint16_t> reduced = Reduced(*src, ids, world);
    const std::vector<std::string> flags =
        ComputedFlags(b, {"ShardBoundary", "ShortLastShard"}, reduced,
                       [&](std::optional<ShardBug> bug, std::optional<DecodeBug> decode) {
                         return RowShardLookupWith(bug, decode, *src, ids, world);
                       },
                       true);
    b.Test(g, "boundary rows of every shard, the short last one's last row included", flags, {"§STO.6", "§STO.7"},
           {{"rowIds", ids}, {"result", "valid"}, {"rows", RowsHex(reduced, kHeadDim)},
            {"intermediate",
             {{"owners", OwnersJson(kLayer14Rows, world, ids)}, {"unsharded", RowsHex(LookupRows(*src, ids), kHeadDim)}}}});
  }
}

ojson GenerateTp() {
  SuiteBuilder b("tp_shard", "storage.schema.json", "ENGRAM-TP-SHARD");
  AddTpNotes(b);
  auto src = SyntheticTable(kSeed, kRows, kHeadDim, false);
  const int64_t neg_row = NegZeroRow(*src, kRows / 3);
  AddRowShardGroups(b, *src, neg_row);
  AddHeadShardGroups(b, *src, neg_row);
  AddHeadShardShapes(b, *src, neg_row);
  AddShortLastShardGroups(b);
  return b.Finish();
}

void CheckRowShard(Checker& c, const json& g, const json& t) {
  auto src = GroupTable(g.at("table"));
  const int world = g.at("world");
  const int64_t rows = src->rows();
  c.Same(t, "group part (ceil(rows / world))", g.at("part"), ShardPart(rows, world));
  c.Same(t, "group shards", g.at("shards"), json::parse(ShardsJson(rows, world).dump()));
  const std::vector<int64_t> ids = t.at("rowIds").get<std::vector<int64_t>>();
  try {
    const std::vector<uint16_t> v = Reduced(*src, ids, world);
    if (!IsValid(t)) return c.Problem(t, "the reference accepts row ids the vector marks invalid");
    c.Expect(t, "rows", json::parse(RowsHex(v, static_cast<size_t>(src->head_dim())).dump()));
    c.Expect(t, "intermediate", json::parse(ojson({{"owners", OwnersJson(rows, world, ids)},
                                                   {"unsharded", RowsHex(LookupRows(*src, ids), static_cast<size_t>(src->head_dim()))}})
                                                .dump()));
  } catch (const Error& e) {
    if (IsValid(t)) c.Problem(t, std::string("the reference refuses a valid test: ") + e.what());
  }
}

void CheckHeadShard(Checker& c, const json& g, const json& t) {
  auto src = GroupTable(g.at("table"));
  const int world = g.at("world"), columns = g.at("columns");
  const std::vector<int64_t> ids = t.at("rowIds").get<std::vector<int64_t>>();
  std::vector<std::vector<uint16_t>> parts;
  for (int r = 0; r < world; ++r) parts.push_back(HeadShardLookup(*src, ids, columns, r, world));
  const int64_t positions = static_cast<int64_t>(ids.size()) / columns;
  c.Expect(t, "rows", json::parse(RowsHex(GatherHeads(parts, positions, columns, world, src->head_dim()),
                                          static_cast<size_t>(src->head_dim())).dump()));
}

}  // namespace

SuiteDef Fp8DecodeSuite() {
  return {"fp8_decode", "storage.schema.json", GenerateFp8,
          {{"E4M3DecodeTest", CheckE4M3}, {"E8M0DecodeTest", CheckE8M0}, {"ElementDecodeTest", CheckElement}}};
}
SuiteDef TableLookupSuite() {
  return {"table_lookup", "storage.schema.json", GenerateLookup,
          {{"SyntheticLookupTest", CheckSyntheticLookup}, {"SafetensorsLookupTest", CheckBytesLookup},
           {"PackedLookupTest", CheckBytesLookup}, {"FloatLookupTest", CheckFloatLookup}}};
}
SuiteDef TpShardSuite() {
  return {"tp_shard", "storage.schema.json", GenerateTp, {{"RowShardTest", CheckRowShard}, {"HeadShardTest", CheckHeadShard}}};
}

}  // namespace engram::vectors
