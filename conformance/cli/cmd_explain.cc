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
#include "reference/fusion.h"
#include "reference/hash.h"
#include "reference/storage.h"

namespace engram::cli {
namespace {

// The synthetic fusion inputs are multiples of 1/64 in [-2, 2) drawn with the
// SplitMix64 finaliser from (seed, stream of values, index): exact in bf16 and
// float32, and independent of the order in which they are drawn.
double SynthValue(uint64_t seed, uint64_t stream, uint64_t index) {
  uint64_t z = seed ^ (stream * 0xD1B54A32D192ED03ULL) ^ (index * 0x9E3779B97F4A7C15ULL);
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
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

std::string Num(double x) {
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

void Run(const Options& o) {
  Loaded l = Load(o.in);
  const Layout& layout = l.layout;
  const std::vector<int64_t> input = ParseIntList(o.ids, "--ids");
  if (input.empty()) throw Error("--ids: give at least one id");
  const std::vector<int64_t> ids = l.token_map ? CompressIds(layout, *l.token_map, input) : input;
  CheckCompressedIds(layout, ids);
  const std::vector<PositionTrace> traces = TraceSequence(layout, ids);
  const size_t n = ids.size();
  const size_t n_layers = layout.layers.size();
  const int cols = layout.columns();

  // Which positions get the detailed per-layer tables (all by default).
  std::set<size_t> detail;
  for (int64_t p : ParseIntList(o.positions, "--positions")) {
    if (p < 0 || static_cast<size_t>(p) >= n) {
      throw Error("--positions: position " + std::to_string(p) + " is outside the " + std::to_string(n) + " ids");
    }
    detail.insert(static_cast<size_t>(p));
  }
  if (!o.has_positions) {
    for (size_t p = 0; p < n; ++p) detail.insert(p);
  }

  // Token texts, when the ids are raw ids of a tokenizer.json.
  std::vector<std::string> texts;
  if (!o.in.tokenizer_path.empty()) {
    const Tokenizer tok = LoadTokenizerJson(o.in.tokenizer_path);
    for (int64_t raw : input) texts.push_back(raw >= 0 && raw < tok.size() ? DecodeToken(tok.tokens[raw]) : "");
  }

  // --synthetic-table: decoded rows and gates, [pos][layer].
  std::vector<std::vector<Extra>> extra;
  const bool synth = o.has_synthetic;
  const uint64_t seed = o.synthetic_table;
  const size_t dim = static_cast<size_t>(o.synthetic_dim);
  const size_t hc = l.config.hc_mult > 0 ? static_cast<size_t>(l.config.hc_mult) : 4;
  const size_t head_dim = static_cast<size_t>(l.config.head_dim);
  const size_t preview = std::min(static_cast<size_t>(o.preview), head_dim);
  if (synth) {
    if (layout.profile == Profile::kDemoV1 && l.config.kernel_size < 1) {
      throw Error(l.config.source + ": kernel_size must be >= 1 for the demo-v1 ShortConv");
    }
    extra.assign(n, std::vector<Extra>(n_layers));
    const size_t in = static_cast<size_t>(cols) * head_dim;
    for (size_t li = 0; li < n_layers; ++li) {
      const LayerLayout& ll = layout.layers[li];
      // Each layer gets its own synthetic table and weights (seed + layer id).
      const uint64_t lseed = seed + static_cast<uint64_t>(ll.layer_id);
      std::vector<int64_t> row_ids;
      for (size_t p = 0; p < n; ++p) row_ids.insert(row_ids.end(), traces[p].rows[li].begin(), traces[p].rows[li].end());
      std::vector<double> e(n * in);  // [pos][col * head_dim + j]
      if (layout.profile == Profile::kV41) {
        // §STO.5 a synthetic table of the real size (no edge rows), §STO.6 lookup -> bf16.
        auto table = SyntheticTable(lseed, ll.num_embeddings, static_cast<int64_t>(head_dim), false);
        const std::vector<uint16_t> rows = LookupRows(*table, row_ids);
        for (size_t i = 0; i < rows.size(); ++i) e[i] = Bf16Value(rows[i]);
        for (size_t p = 0; p < n; ++p) {
          for (int64_t r : traces[p].rows[li]) extra[p][li].bytes.push_back(table->Row(r));
        }
      } else {
        // §STO.10 the demo's float32 multi-head embedding, synthetic.
        auto table = SyntheticFloatTable(lseed, ll.num_embeddings, static_cast<int64_t>(head_dim));
        const std::vector<float> rows = LookupFloatRows(*table, row_ids);
        for (size_t i = 0; i < rows.size(); ++i) e[i] = rows[i];
      }
      for (size_t p = 0; p < n; ++p) {
        Extra& x = extra[p][li];
        for (int c = 0; c < cols; ++c) {
          const double* r = &e[p * in + static_cast<size_t>(c) * head_dim];
          x.preview.emplace_back(r, r + preview);
        }
      }
      // Synthetic hidden state: [pos][hc][dim], the same for every layer.
      const std::vector<double> hidden = SynthArray(seed, kHidden, n * hc * dim);
      if (layout.profile == Profile::kV41) {
        // §FUS.2 a plain bf16 wkv: e (cols*head_dim) -> hc keys and one value of width dim.
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
          const bool masked = ids[p] == kDead;  // §FUS: gate 0 at masked positions
          for (size_t c = 0; c < hc; ++c) {
            V41StreamTrace t = FuseV41Stream(std::span<const uint16_t>(&xb[c * dim], dim),
                                             std::span<const uint16_t>(&kvb[c * dim], dim), value,
                                             std::span<const uint16_t>(&qw[c * dim], dim),
                                             std::span<const uint16_t>(&kw[c * dim], dim), l.config.norm_eps, masked,
                                             Precision::kFloat64);
            extra[p][li].gates.push_back(t.gate);
            const GateParts& g = t.gate_parts;
            extra[p][li].gate_steps.push_back(
                {{"mean_h2", t.mean_h2}, {"rstd_h", t.rstd_h}, {"mean_k2", t.mean_k2}, {"rstd_k", t.rstd_k},
                 {"rstd", t.rstd}, {"sum_hwk", t.sum_hwk}, {"dot", t.dot}, {"clamped", g.clamped},
                 {"root", g.root}, {"signed_root", g.signed_root}, {"sigmoid", g.gate}, {"masked", masked},
                 {"gate", t.gate}});
          }
        }
      } else {
        DemoParams q;
        q.hc = hc;
        q.hidden = dim;
        q.in = in;
        q.kernel = static_cast<size_t>(l.config.kernel_size);
        q.dilation = static_cast<size_t>(l.config.max_ngram);
        q.key_w = SynthArray(lseed, kKeyW, hc * dim * in);
        q.key_b = SynthArray(lseed, kKeyB, hc * dim);
        q.norm1_w = SynthNormWeights(lseed, kNorm1, hc * dim);
        q.norm2_w = SynthNormWeights(lseed, kNorm2, hc * dim);
        q.value_w = SynthArray(lseed, kValueW, dim * in);
        q.value_b = SynthArray(lseed, kValueB, dim);
        q.conv_norm_w = SynthNormWeights(lseed, kConvNorm, hc * dim);
        q.conv_w = SynthArray(lseed, kConvW, hc * dim * q.kernel);
        const DemoForwardTrace f = DemoForward(e, hidden, n, q, Precision::kFloat64);
        for (size_t p = 0; p < n; ++p) {
          for (const DemoStreamTrace& s : f.tokens[p].streams) {
            extra[p][li].gates.push_back(s.gate);
            const GateParts& g = s.gate_parts;
            extra[p][li].gate_steps.push_back(
                {{"rstd_key", s.normed_key.rstd}, {"rstd_query", s.normed_query.rstd}, {"sum", s.sum},
                 {"g", s.g}, {"clamped", g.clamped}, {"root", g.root}, {"signed_root", g.signed_root},
                 {"sigmoid", g.gate}, {"gate", s.gate}});
          }
        }
      }
    }
  }

  if (o.json) {
    ojson doc;
    doc["profile"] = std::string(ProfileName(layout.profile));
    doc["compressed_vocab_size"] = layout.compressed_vocab_size;
    doc["pad"] = {{"raw", l.config.pad_id}, {"compressed", layout.pad}};
    doc["max_ngram"] = layout.max_ngram;
    doc["heads"] = layout.heads;
    doc["bases"] = l.config.bases;  // §LAY.2 per order n = 2 .. max: the primes are searched from base - 1
    doc["ids_are"] = l.token_map ? "raw" : "compressed";
    doc["layers"] = ojson::array();
    for (const LayerLayout& ll : layout.layers) {
      doc["layers"].push_back({{"layer_id", ll.layer_id},
                               {"multipliers", ll.multipliers},
                               {"primes", ll.primes},
                               {"offsets", ll.offsets},
                               {"num_embeddings", ll.num_embeddings}});
    }
    if (synth) {
      doc["synthetic"] = {{"table_seed", o.synthetic_table},
                          {"dim", dim},
                          {"hc", hc},
                          {"head_dim", head_dim},
                          {"preview", preview}};
    }
    doc["positions"] = ojson::array();
    for (size_t p = 0; p < n; ++p) {
      const PositionTrace& t = traces[p];
      ojson pos;
      pos["position"] = p;
      pos["raw_id"] = l.token_map ? ojson(input[p]) : ojson(nullptr);
      if (!texts.empty()) pos["text"] = texts[p];
      pos["compressed_id"] = ids[p];
      pos["window"] = t.window;
      pos["blocked"] = t.blocked;
      pos["tokens"] = t.tokens;
      pos["layers"] = ojson::array();
      for (size_t li = 0; li < n_layers; ++li) {
        ojson lj = {{"layer_id", layout.layers[li].layer_id},
                    {"products", Products(t.tokens, layout.layers[li].multipliers)},
                    {"mixes", t.mixes[li]},
                    {"residues", t.residues[li]},
                    {"rows", t.rows[li]}};
        if (synth) {
          lj["row_preview"] = extra[p][li].preview;
          if (!extra[p][li].bytes.empty()) {
            // §STO.3 the previewed elements' codes and scales, their values and the bf16 result.
            ojson decode = ojson::array();
            for (const RowBytes& b : extra[p][li].bytes) {
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
            lj["row_decode"] = decode;
          }
          lj["gates"] = extra[p][li].gates;
          lj["gate_steps"] = extra[p][li].gate_steps;
        }
        pos["layers"].push_back(lj);
      }
      doc["positions"].push_back(pos);
    }
    Emit(doc, o.out);
    return;
  }

  std::ostringstream os;
  os << "engram explain: profile " << ProfileName(layout.profile) << ", V = " << layout.compressed_vocab_size
     << ", pad: raw " << l.config.pad_id << " -> compressed " << layout.pad << ", max n-gram " << layout.max_ngram
     << ", " << layout.heads << " heads per order, " << cols << " columns per layer\n";
  os << "ids: " << (l.token_map ? "raw tokenizer ids, compressed through the token map (" +
                                      std::to_string(l.token_map->tokens()) + " -> " +
                                      std::to_string(l.token_map->compressed_size) + ")"
                                : std::string("compressed ids given directly"))
     << "\n";
  for (const LayerLayout& ll : layout.layers) {
    os << "layer " << ll.layer_id << ": multipliers m0..m" << layout.max_ngram - 1 << " = " << List(ll.multipliers)
       << ", rows " << ll.num_embeddings << "\n";
  }
  if (synth) {
    os << "synthetic: table seed " << o.synthetic_table << " (+ layer id), "
       << (layout.profile == Profile::kV41 ? "FP8 rows decoded to bf16 (spec/storage.md §STO.5)"
                                            : "float32 rows (spec/storage.md §STO.10)")
       << "; gates for a synthetic hidden state and weights, width " << dim << " (not the model's "
       << l.config.hidden_size << "), " << hc << " streams\n";
  }

  // Summary: one line per position.
  os << "\n" << Pad("pos", 4) << Pad("raw", 8) << "  " << Pad("text", 14, false) << Pad("comp", 8) << "  "
     << Pad("window (x_0 .. x_" + std::to_string(layout.max_ngram - 1) + ")", 34, false)
     << Pad("blocked", 10, false) << "tokens\n";
  for (size_t p = 0; p < n; ++p) {
    const PositionTrace& t = traces[p];
    std::string window = "[";
    for (size_t s = 0; s < t.window.size(); ++s) {
      window += (s ? ", " : "") + IdText(t.window[s], layout, p < s);
    }
    window += "]";
    std::string blocked;
    for (uint8_t b : t.blocked) blocked += b ? '1' : '0';
    os << Pad(std::to_string(p), 4) << Pad(l.token_map ? std::to_string(input[p]) : "-", 8) << "  "
       << Pad(texts.empty() ? "" : Printable(texts[p]), 14, false) << Pad(IdText(ids[p], layout, false), 8) << "  "
       << Pad(window, 34, false) << Pad(blocked, 10, false) << List(t.tokens) << "\n";
  }
  if (synth) {
    os << "\ngates (one per stream, float64 reference):\n";
    for (size_t p = 0; p < n; ++p) {
      os << Pad(std::to_string(p), 4);
      for (size_t li = 0; li < n_layers; ++li) {
        os << "   layer " << layout.layers[li].layer_id << ":";
        for (double g : extra[p][li].gates) os << " " << Pad(Num(g), 10, false);
      }
      os << "\n";
    }
  }

  // Detail: per position and layer, the mixes and every column.
  for (size_t p : detail) {
    const PositionTrace& t = traces[p];
    os << "\nposition " << p;
    if (l.token_map) os << "  raw " << input[p];
    if (!texts.empty()) os << " " << Printable(texts[p]);
    os << "  compressed " << IdText(ids[p], layout, false) << "  tokens " << List(t.tokens) << "\n";
    for (size_t li = 0; li < n_layers; ++li) {
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
      if (synth && preview > 0) os << "   row values [0.." << preview - 1 << "]";
      os << "\n";
      for (int c = 0; c < cols; ++c) {
        const size_t cu = static_cast<size_t>(c);
        os << "    " << Pad(std::to_string(c), 4) << Pad(std::to_string(c / layout.heads + 2), 3)
           << Pad(std::to_string(c % layout.heads), 6) << Pad(std::to_string(ll.prime(c)), 12)
           << Pad(std::to_string(t.residues[li][cu]), 12) << Pad(std::to_string(ll.offsets[cu]), 12)
           << Pad(std::to_string(t.rows[li][cu]), 12);
        if (synth && preview > 0) {
          os << "   ";
          for (double v : extra[p][li].preview[cu]) os << " " << Pad(Num(v), 11);
        }
        os << "\n";
      }
    }
  }
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
