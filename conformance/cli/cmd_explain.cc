// `engram explain` (docs/walkthrough.md): every intermediate value of the
// hash for each position of a sequence, as a readable table or as JSON.
//
//   ids --§HASH.1--> compressed ids --§HASH.2--> window, blocked slots, tokens
//       --§HASH.3--> product per slot, rolling mix per order --§HASH.4--> residue and row per column
//
// and, with --synthetic-table SEED, what happens to the rows next:
//
//   rows --§STO.5/§STO.6--> decoded table rows (a synthetic real-size table; preview)
//        --§FUS--> one gate per hyper-connection stream, for a synthetic hidden
//                  state and synthetic projection weights of a small width.
//
// Nothing here is a new algorithm: the hash is TraceSequence (reference/hash.cc),
// the rows come from SyntheticTable / SyntheticFloatTable (reference/storage.cc),
// the gates from FuseV41Stream / DemoForward (reference/fusion.cc). This file
// only chooses the synthetic inputs and prints, and spells out the terms the
// trace folds together: the product of each slot (the XOR of the products is
// the mix, §HASH.3), the codes and scales of a decoded row (§STO.3) and the
// steps of each gate (§FUS.4, §FUS.6), so that docs/figures/explain_figures.py
// can draw every number from this command's JSON.
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include "conformance/cli/common.h"
#include "base/fileio.h"
#include "base/error.h"
#include "base/splitmix64.h"
#include "reference/fusion.h"
#include "reference/hash.h"
#include "reference/storage.h"

namespace engram::cli {
namespace {

// The synthetic fusion inputs are multiples of 1/64 in [-2, 2) drawn with the
// SplitMix64 finaliser from (seed, stream of values, index): exact in bf16 and
// float32, and independent of the order in which they are drawn.
double SynthValue(uint64_t seed, uint64_t stream, uint64_t index) {
  const uint64_t z = SplitMix64Of(seed ^ (stream * 0xD1B54A32D192ED03ULL) ^ (index * kSplitMix64Golden));
  return static_cast<double>(static_cast<int64_t>(z % 256) - 128) / 64.0;
}

// Value streams of the synthetic fusion inputs (so that each array is its own sequence).
enum SynthStream : uint64_t {
  kHidden = 1,      // hidden state x [pos][hc][dim]
  kWkv = 2,         // v4.1 wkv [dim*(hc+1)][in]
  kQWeight = 3,     // v4.1 q_weight [hc][dim]
  kKWeight = 4,     // v4.1 k_weight [hc][dim]
  kKeyW = 5,        // demo key projections [hc][hidden][in]
  kKeyB = 6,        // demo key biases [hc][hidden]
  kNorm1 = 7,       // demo RMSNorm1 weights [hc][hidden]
  kNorm2 = 8,       // demo RMSNorm2 weights [hc][hidden]
  kValueW = 9,      // demo value projection [hidden][in]
  kValueB = 10,     // demo value bias [hidden]
  kConvNorm = 11,   // demo ShortConv RMSNorm weights [hc][hidden]
  kConvW = 12,      // demo ShortConv taps [hc*hidden][kernel]
};

std::vector<double> SynthArray(uint64_t seed, uint64_t stream, size_t n, uint64_t first = 0) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = SynthValue(seed, stream, first + i);
  return v;
}

// RMSNorm weights around 1 (1 + a multiple of 1/256 in [-1/8, 1/8)), so the norms look like trained ones.
std::vector<double> SynthNormWeights(uint64_t seed, uint64_t stream, size_t n) {
  std::vector<double> v = SynthArray(seed, stream, n);
  for (double& x : v) x = 1.0 + x / 16.0;
  return v;
}

std::vector<uint16_t> ToBf16Bits(const std::vector<double>& v) {
  std::vector<uint16_t> b;
  b.reserve(v.size());
  for (double x : v) b.push_back(ToBf16(Round(x, Precision::kFloat32)));
  return b;
}

// §HASH.3 product_s = tok_s * m_s modulo 2^64, as the int64 of the same bits
// (two's complement, like the mixes): the terms the rolling mix XORs. For
// valid v4.1 ids every product is below 2^63 and nothing wraps (§HASH.7).
std::vector<int64_t> Products(const std::vector<int64_t>& tokens, const std::vector<int64_t>& multipliers) {
  std::vector<int64_t> out;
  for (size_t s = 0; s < tokens.size(); ++s) {
    out.push_back(static_cast<int64_t>(static_cast<uint64_t>(tokens[s]) * static_cast<uint64_t>(multipliers[s])));
  }
  return out;
}

// What --synthetic-table adds for one position and layer.
struct Extra {
  std::vector<std::vector<double>> preview;  // [col][first `preview` values of the decoded row]
  std::vector<RowBytes> bytes;               // v4.1: [col] the stored row (codes and scales)
  std::vector<double> gates;                 // [hc]
  std::vector<ojson> gate_steps;             // [hc] every step of the stream's gate
};

struct Options {
  Inputs in;
  std::string ids, positions, out;
  bool json = false;
  bool has_positions = false;    // --positions given (possibly empty: no detailed tables)
  bool has_synthetic = false;    // --synthetic-table given
  uint64_t synthetic_table = 0;
  int64_t synthetic_dim = 16;
  int64_t preview = 4;
};

std::string Short(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

std::string IdText(int64_t id, const Layout& layout, bool is_window_pad) {
  if (is_window_pad) return "pad";
  if (layout.profile == Profile::kV41 && id == kDead) return "DEAD";
  return std::to_string(id);
}

// A token's text for the table: the single-id decode, control characters escaped.
std::string Printable(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return "\"" + out + "\"";
}

std::string Pad(const std::string& s, size_t width, bool right = true) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

template <typename T>
std::string List(const std::vector<T>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

// Everything the command prints, computed first; ExplainJson and ExplainText
// only format it.
struct Explained {
  Loaded l;
  std::vector<int64_t> input;               // the ids as given
  std::vector<int64_t> ids;                 // compressed (§HASH.1)
  std::vector<PositionTrace> traces;        // §HASH.8, per position
  std::set<size_t> detail;                  // positions that get the per-layer tables
  std::vector<std::string> texts;           // token texts, when a tokenizer.json was given
  bool synth = false;                       // --synthetic-table given
  size_t dim = 0, hc = 0, head_dim = 0, preview = 0;
  std::vector<std::vector<Extra>> extra;    // [pos][layer], with --synthetic-table
};

// §FUS.2-§FUS.4 The v4.1 gate of every stream of every position, for a plain
// bf16 wkv and synthetic weights of width x.dim; e is [pos][col * head_dim + j].
void V41Gates(Explained& x, size_t li, uint64_t lseed, const std::vector<double>& e,
              const std::vector<double>& hidden) {
  const size_t n = x.ids.size(), hc = x.hc, dim = x.dim, in = e.size() / n;
  const std::vector<double> wkv = SynthArray(lseed, kWkv, dim * (hc + 1) * in);
  const std::vector<uint16_t> qw = ToBf16Bits(SynthNormWeights(lseed, kQWeight, hc * dim));
  const std::vector<uint16_t> kw = ToBf16Bits(SynthNormWeights(lseed, kKWeight, hc * dim));
  for (size_t p = 0; p < n; ++p) {
    const std::vector<double> kv =
        LinearNoBias(std::span<const double>(&e[p * in], in), wkv, dim * (hc + 1), Precision::kFloat64);
    const std::vector<uint16_t> kvb = ToBf16Bits(kv);
    const std::vector<uint16_t> xb =
        ToBf16Bits(std::vector<double>(hidden.begin() + static_cast<std::ptrdiff_t>(p * hc * dim),
                                       hidden.begin() + static_cast<std::ptrdiff_t>((p + 1) * hc * dim)));
    const std::span<const uint16_t> value(&kvb[hc * dim], dim);
    const bool masked = x.ids[p] == kDead;  // §FUS: gate 0 at masked positions
    for (size_t c = 0; c < hc; ++c) {
      V41StreamTrace t = FuseV41Stream(std::span<const uint16_t>(&xb[c * dim], dim),
                                       std::span<const uint16_t>(&kvb[c * dim], dim), value,
                                       std::span<const uint16_t>(&qw[c * dim], dim),
                                       std::span<const uint16_t>(&kw[c * dim], dim), x.l.config.norm_eps, masked,
                                       Precision::kFloat64);
      x.extra[p][li].gates.push_back(t.gate);
      const GateParts& g = t.gate_parts;
      x.extra[p][li].gate_steps.push_back(
          {{"mean_h2", t.mean_h2}, {"rstd_h", t.rstd_h}, {"mean_k2", t.mean_k2}, {"rstd_k", t.rstd_k},
           {"rstd", t.rstd}, {"sum_hwk", t.sum_hwk}, {"dot", t.dot}, {"clamped", g.clamped},
           {"root", g.root}, {"signed_root", g.signed_root}, {"sigmoid", g.gate}, {"masked", masked},
           {"gate", t.gate}});
    }
  }
}

// §FUS.5-§FUS.7 The demo gates of every stream of every position (the whole
// demo forward, synthetic weights of width x.dim).
void DemoGates(Explained& x, size_t li, uint64_t lseed, const std::vector<double>& e,
               const std::vector<double>& hidden) {
  const size_t n = x.ids.size(), hc = x.hc, dim = x.dim;
  DemoParams q;
  q.hc = hc;
  q.hidden = dim;
  q.in = e.size() / n;
  q.kernel = static_cast<size_t>(x.l.config.kernel_size);
  q.dilation = static_cast<size_t>(x.l.config.max_ngram);
  q.key_w = SynthArray(lseed, kKeyW, hc * dim * q.in);
  q.key_b = SynthArray(lseed, kKeyB, hc * dim);
  q.norm1_w = SynthNormWeights(lseed, kNorm1, hc * dim);
  q.norm2_w = SynthNormWeights(lseed, kNorm2, hc * dim);
  q.value_w = SynthArray(lseed, kValueW, dim * q.in);
  q.value_b = SynthArray(lseed, kValueB, dim);
  q.conv_norm_w = SynthNormWeights(lseed, kConvNorm, hc * dim);
  q.conv_w = SynthArray(lseed, kConvW, hc * dim * q.kernel);
  const DemoForwardTrace f = DemoForward(e, hidden, n, q, Precision::kFloat64);
  for (size_t p = 0; p < n; ++p) {
    for (const DemoStreamTrace& s : f.tokens[p].streams) {
      x.extra[p][li].gates.push_back(s.gate);
      const GateParts& g = s.gate_parts;
      x.extra[p][li].gate_steps.push_back(
          {{"rstd_key", s.normed_key.rstd}, {"rstd_query", s.normed_query.rstd}, {"sum", s.sum},
           {"g", s.g}, {"clamped", g.clamped}, {"root", g.root}, {"signed_root", g.signed_root},
           {"sigmoid", g.gate}, {"gate", s.gate}});
    }
  }
}

// --synthetic-table: each layer's decoded rows and gates, [pos][layer].
void AddSynthetic(Explained& x, uint64_t seed) {
  const Layout& layout = x.l.layout;
  const size_t n = x.ids.size(), n_layers = layout.layers.size(), head_dim = x.head_dim;
  const int cols = layout.columns();
  if (layout.profile == Profile::kDemoV1 && x.l.config.kernel_size < 1) {
    throw Error(x.l.config.source + ": kernel_size must be >= 1 for the demo-v1 ShortConv");
  }
  x.extra.assign(n, std::vector<Extra>(n_layers));
  const size_t in = static_cast<size_t>(cols) * head_dim;
  for (size_t li = 0; li < n_layers; ++li) {
    const LayerLayout& ll = layout.layers[li];
    // Each layer gets its own synthetic table and weights (seed + layer id).
    const uint64_t lseed = seed + static_cast<uint64_t>(ll.layer_id);
    std::vector<int64_t> row_ids;
    for (size_t p = 0; p < n; ++p) row_ids.insert(row_ids.end(), x.traces[p].rows[li].begin(), x.traces[p].rows[li].end());
    std::vector<double> e(n * in);  // [pos][col * head_dim + j]
    if (layout.profile == Profile::kV41) {
      // §STO.5 a synthetic table of the real size (no edge rows), §STO.6 lookup -> bf16.
      auto table = SyntheticTable(lseed, ll.num_embeddings, static_cast<int64_t>(head_dim), false);
      const std::vector<uint16_t> rows = LookupRows(*table, row_ids);
      for (size_t i = 0; i < rows.size(); ++i) e[i] = Bf16Value(rows[i]);
      for (size_t p = 0; p < n; ++p) {
        for (int64_t r : x.traces[p].rows[li]) x.extra[p][li].bytes.push_back(table->Row(r));
      }
    } else {
      // §STO.10 the demo's float32 multi-head embedding, synthetic.
      auto table = SyntheticFloatTable(lseed, ll.num_embeddings, static_cast<int64_t>(head_dim));
      const std::vector<float> rows = LookupFloatRows(*table, row_ids);
      for (size_t i = 0; i < rows.size(); ++i) e[i] = rows[i];
    }
    for (size_t p = 0; p < n; ++p) {
      for (int c = 0; c < cols; ++c) {
        const double* r = &e[p * in + static_cast<size_t>(c) * head_dim];
        x.extra[p][li].preview.emplace_back(r, r + x.preview);
      }
    }
    // Synthetic hidden state: [pos][hc][dim], the same for every layer.
    const std::vector<double> hidden = SynthArray(seed, kHidden, n * x.hc * x.dim);
    if (layout.profile == Profile::kV41) {
      V41Gates(x, li, lseed, e, hidden);
    } else {
      DemoGates(x, li, lseed, e, hidden);
    }
  }
}

Explained Compute(const Options& o) {
  Explained x;
  x.l = Load(o.in);
  const Layout& layout = x.l.layout;
  x.input = ParseIntList(o.ids, "--ids");
  if (x.input.empty()) throw Error("--ids: give at least one id");
  x.ids = x.l.token_map ? CompressIds(layout, *x.l.token_map, x.input) : x.input;
  CheckCompressedIds(layout, x.ids);
  x.traces = TraceSequence(layout, x.ids);
  const size_t n = x.ids.size();

  // Which positions get the detailed per-layer tables (all by default).
  for (int64_t p : ParseIntList(o.positions, "--positions")) {
    if (p < 0 || static_cast<size_t>(p) >= n) {
      throw Error("--positions: position " + std::to_string(p) + " is outside the " + std::to_string(n) + " ids");
    }
    x.detail.insert(static_cast<size_t>(p));
  }
  if (!o.has_positions) {
    for (size_t p = 0; p < n; ++p) x.detail.insert(p);
  }

  // Token texts, when the ids are raw ids of a tokenizer.json.
  if (!o.in.tokenizer_path.empty()) {
    const Tokenizer tok = LoadTokenizerJson(o.in.tokenizer_path);
    for (int64_t raw : x.input) x.texts.push_back(raw >= 0 && raw < tok.size() ? DecodeToken(tok.tokens[raw]) : "");
  }

  x.synth = o.has_synthetic;
  x.dim = static_cast<size_t>(o.synthetic_dim);
  x.hc = x.l.config.hc_mult > 0 ? static_cast<size_t>(x.l.config.hc_mult) : 4;
  x.head_dim = static_cast<size_t>(x.l.config.head_dim);
  x.preview = std::min(static_cast<size_t>(o.preview), x.head_dim);
  if (x.synth) AddSynthetic(x, o.synthetic_table);
  return x;
}

// §STO.3 the previewed elements' codes and scales, their values and the bf16 result.
ojson RowDecodeJson(const std::vector<RowBytes>& rows, size_t preview) {
  ojson decode = ojson::array();
  for (const RowBytes& b : rows) {
    ojson codes = ojson::array(), e4m3 = ojson::array(), scales = ojson::array(), e8m0 = ojson::array(),
          bf16 = ojson::array();
    for (size_t j = 0; j < preview; ++j) {
      const uint8_t c = b.codes[j], s = b.scales[j / static_cast<size_t>(kScaleBlock)];
      codes.push_back(c);
      e4m3.push_back(static_cast<double>(DecodeE4M3(c)));
      scales.push_back(s);
      e8m0.push_back(DecodeE8M0(s));
      bf16.push_back(DecodeElement(c, s));
    }
    decode.push_back({{"codes", codes}, {"e4m3", e4m3}, {"scales", scales}, {"e8m0", e8m0}, {"bf16", bf16}});
  }
  return decode;
}

ojson ExplainJson(const Explained& x, uint64_t table_seed) {
  const Layout& layout = x.l.layout;
  ojson doc;
  doc["profile"] = std::string(ProfileName(layout.profile));
  doc["compressed_vocab_size"] = layout.compressed_vocab_size;
  doc["pad"] = {{"raw", x.l.config.pad_id}, {"compressed", layout.pad}};
  doc["max_ngram"] = layout.max_ngram;
  doc["heads"] = layout.heads;
  doc["bases"] = x.l.config.bases;  // §LAY.2 per order n = 2 .. max: the primes are searched from base - 1
  doc["ids_are"] = x.l.token_map ? "raw" : "compressed";
  doc["layers"] = ojson::array();
  for (const LayerLayout& ll : layout.layers) {
    doc["layers"].push_back({{"layer_id", ll.layer_id},
                             {"multipliers", ll.multipliers},
                             {"primes", ll.primes},
                             {"offsets", ll.offsets},
                             {"num_embeddings", ll.num_embeddings}});
  }
  if (x.synth) {
    doc["synthetic"] = {{"table_seed", table_seed},
                        {"dim", x.dim},
                        {"hc", x.hc},
                        {"head_dim", x.head_dim},
                        {"preview", x.preview}};
  }
  doc["positions"] = ojson::array();
  for (size_t p = 0; p < x.ids.size(); ++p) {
    const PositionTrace& t = x.traces[p];
    ojson pos;
    pos["position"] = p;
    pos["raw_id"] = x.l.token_map ? ojson(x.input[p]) : ojson(nullptr);
    if (!x.texts.empty()) pos["text"] = x.texts[p];
    pos["compressed_id"] = x.ids[p];
    pos["window"] = t.window;
    pos["blocked"] = t.blocked;
    pos["tokens"] = t.tokens;
    pos["layers"] = ojson::array();
    for (size_t li = 0; li < layout.layers.size(); ++li) {
      ojson lj = {{"layer_id", layout.layers[li].layer_id},
                  {"products", Products(t.tokens, layout.layers[li].multipliers)},
                  {"mixes", t.mixes[li]},
                  {"residues", t.residues[li]},
                  {"rows", t.rows[li]}};
      if (x.synth) {
        const Extra& ex = x.extra[p][li];
        lj["row_preview"] = ex.preview;
        if (!ex.bytes.empty()) lj["row_decode"] = RowDecodeJson(ex.bytes, x.preview);
        lj["gates"] = ex.gates;
        lj["gate_steps"] = ex.gate_steps;
      }
      pos["layers"].push_back(lj);
    }
    doc["positions"].push_back(pos);
  }
  return doc;
}

// The header and the one-line-per-position summary (and the gates, with --synthetic-table).
void PrintSummary(std::ostringstream& os, const Explained& x, uint64_t table_seed) {
  const Layout& layout = x.l.layout;
  const size_t n = x.ids.size();
  os << "engram explain: profile " << ProfileName(layout.profile) << ", V = " << layout.compressed_vocab_size
     << ", pad: raw " << x.l.config.pad_id << " -> compressed " << layout.pad << ", max n-gram " << layout.max_ngram
     << ", " << layout.heads << " heads per order, " << layout.columns() << " columns per layer\n";
  os << "ids: " << (x.l.token_map ? "raw tokenizer ids, compressed through the token map (" +
                                        std::to_string(x.l.token_map->tokens()) + " -> " +
                                        std::to_string(x.l.token_map->compressed_size) + ")"
                                  : std::string("compressed ids given directly"))
     << "\n";
  for (const LayerLayout& ll : layout.layers) {
    os << "layer " << ll.layer_id << ": multipliers m0..m" << layout.max_ngram - 1 << " = " << List(ll.multipliers)
       << ", rows " << ll.num_embeddings << "\n";
  }
  if (x.synth) {
    os << "synthetic: table seed " << table_seed << " (+ layer id), "
       << (layout.profile == Profile::kV41 ? "FP8 rows decoded to bf16 (spec/storage.md §STO.5)"
                                            : "float32 rows (spec/storage.md §STO.10)")
       << "; gates for a synthetic hidden state and weights, width " << x.dim << " (not the model's "
       << x.l.config.hidden_size << "), " << x.hc << " streams\n";
  }

  os << "\n" << Pad("pos", 4) << Pad("raw", 8) << "  " << Pad("text", 14, false) << Pad("comp", 8) << "  "
     << Pad("window (x_0 .. x_" + std::to_string(layout.max_ngram - 1) + ")", 34, false)
     << Pad("blocked", 10, false) << "tokens\n";
  for (size_t p = 0; p < n; ++p) {
    const PositionTrace& t = x.traces[p];
    std::string window = "[";
    for (size_t s = 0; s < t.window.size(); ++s) {
      window += (s ? ", " : "") + IdText(t.window[s], layout, p < s);
    }
    window += "]";
    std::string blocked;
    for (uint8_t b : t.blocked) blocked += b ? '1' : '0';
    os << Pad(std::to_string(p), 4) << Pad(x.l.token_map ? std::to_string(x.input[p]) : "-", 8) << "  "
       << Pad(x.texts.empty() ? "" : Printable(x.texts[p]), 14, false) << Pad(IdText(x.ids[p], layout, false), 8)
       << "  " << Pad(window, 34, false) << Pad(blocked, 10, false) << List(t.tokens) << "\n";
  }
  if (x.synth) {
    os << "\ngates (one per stream, float64 reference):\n";
    for (size_t p = 0; p < n; ++p) {
      os << Pad(std::to_string(p), 4);
      for (size_t li = 0; li < layout.layers.size(); ++li) {
        os << "   layer " << layout.layers[li].layer_id << ":";
        for (double g : x.extra[p][li].gates) os << " " << Pad(Short(g), 10, false);
      }
      os << "\n";
    }
  }
}

// Detail: per position and layer, the products, the mixes and every column.
void PrintDetail(std::ostringstream& os, const Explained& x, size_t p) {
  const Layout& layout = x.l.layout;
  const PositionTrace& t = x.traces[p];
  const bool values = x.synth && x.preview > 0;
  os << "\nposition " << p;
  if (x.l.token_map) os << "  raw " << x.input[p];
  if (!x.texts.empty()) os << " " << Printable(x.texts[p]);
  os << "  compressed " << IdText(x.ids[p], layout, false) << "  tokens " << List(t.tokens) << "\n";
  for (size_t li = 0; li < layout.layers.size(); ++li) {
    const LayerLayout& ll = layout.layers[li];
    const std::vector<int64_t> products = Products(t.tokens, ll.multipliers);
    os << "  layer " << ll.layer_id << "  products:";
    for (size_t s = 0; s < products.size(); ++s) os << "  tok_" << s << "*m" << s << " " << products[s];
    os << "\n";
    os << "  layer " << ll.layer_id << "  mixes:";
    for (int o2 = 0; o2 < layout.orders(); ++o2) os << "  " << o2 + 2 << "-gram " << t.mixes[li][static_cast<size_t>(o2)];
    os << "\n";
    os << "    " << Pad("col", 4) << Pad("n", 3) << Pad("head", 6) << Pad("prime", 12) << Pad("residue", 12)
       << Pad("offset", 12) << Pad("row", 12);
    if (values) os << "   row values [0.." << x.preview - 1 << "]";
    os << "\n";
    for (int c = 0; c < layout.columns(); ++c) {
      const size_t cu = static_cast<size_t>(c);
      os << "    " << Pad(std::to_string(c), 4) << Pad(std::to_string(c / layout.heads + 2), 3)
         << Pad(std::to_string(c % layout.heads), 6) << Pad(std::to_string(ll.prime(c)), 12)
         << Pad(std::to_string(t.residues[li][cu]), 12) << Pad(std::to_string(ll.offsets[cu]), 12)
         << Pad(std::to_string(t.rows[li][cu]), 12);
      if (values) {
        os << "   ";
        for (double v : x.extra[p][li].preview[cu]) os << " " << Pad(Short(v), 11);
      }
      os << "\n";
    }
  }
}

void Run(const Options& o) {
  const Explained x = Compute(o);
  if (o.json) {
    Emit(ExplainJson(x, o.synthetic_table), o.out);
    return;
  }
  std::ostringstream os;
  PrintSummary(os, x, o.synthetic_table);
  for (size_t p : x.detail) PrintDetail(os, x, p);
  if (o.out.empty()) {
    std::cout << os.str();
  } else {
    WriteFileAtomic(o.out, os.str());  // whole or not at all, like every other --out
  }
}

}  // namespace

void AddExplainCommand(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "explain", "Every intermediate of the hash per position (ids, window, mixes, residues, rows), as a table or JSON");
  AddInputOptions(cmd, o->in, true);
  cmd->add_option("--ids", o->ids,
                  "Comma-separated decimal ids, at least one: raw ids with --tokenizer/--token-map, else compressed "
                  "ids (v4.1: -1 = DEAD)")
      ->required();
  cmd->add_flag("--json", o->json, "Print the same as JSON");
  auto* positions = cmd->add_option("--positions", o->positions,
                                    "Detailed tables only for these positions (comma-separated; default: all; "
                                    "--positions= : none)");
  auto* table = cmd->add_option("--synthetic-table", o->synthetic_table,
                                "Also decode the rows of a synthetic real-size table with this seed (spec/storage.md "
                                "§STO.5) and compute gates for a synthetic hidden state (§FUS)")
                    ->check(UnsignedIn(0, UINT64_MAX, "a 64-bit seed"));
  cmd->add_option("--synthetic-dim", o->synthetic_dim, "Width of the synthetic hidden state and projections (16)")
      ->check(IntIn(1, 4096, "the width of the synthetic hidden state"));
  cmd->add_option("--preview", o->preview, "Decoded values shown per row (4; at most head_dim are shown)")
      ->check(IntIn(0, INT64_MAX, "a count of values"));
  cmd->add_option("--out", o->out, "Write the output here instead of stdout (atomically)");
  cmd->callback([o, positions, table] {
    o->has_positions = positions->count() > 0;
    o->has_synthetic = table->count() > 0;
    Run(*o);
  });
}

}  // namespace engram::cli
