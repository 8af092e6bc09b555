// `engram layout` and `engram hash` (spec §LAY, §HASH).
#include <algorithm>
#include <memory>
#include <span>

#include "conformance/cli/common.h"
#include "conformance/cli/history_formats.h"
#include "base/fileio.h"
#include "reference/input_files.h"
#include "base/error.h"
#include "reference/hash.h"
#include "vectors/suite.h"

namespace engram::cli {
namespace {

bool IsJsonPath(const std::string& path) {
  return path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
}

// §HASH.9 Histories travel as JSON (*.json) or in the binary form; §CON.6
// another port's format (JSON) with --history-format.
HashHistory ReadHistoryFile(const std::string& path, const std::string& format, const Loaded& l) {
  const std::string bytes = ReadInputFile(path, InputKind::kHistory);
  if (format != "engram") return ReadForeignHistory(format, ParseJson(bytes, path), l.layout, l.token_map, path);
  if (!IsJsonPath(path)) return DecodeHistoryBinary(bytes, path);
  return HistoryFromJson(ParseJson(bytes, path), path);
}

void WriteHistoryFile(const std::string& path, const HashHistory& history, const std::string& format, const Loaded& l) {
  if (format != "engram") {
    WriteFileAtomic(path, WriteForeignHistory(format, history, l.layout, l.token_map).dump(1) + "\n");
    return;
  }
  WriteFileAtomic(path, IsJsonPath(path) ? HistoryToJson(history).dump(1) + "\n" : EncodeHistoryBinary(history));
}

}  // namespace

void AddLayoutCommand(CLI::App& app) {
  struct State {
    Inputs in;
    std::string out;
  };
  auto s = std::make_shared<State>();
  auto* cmd = app.add_subcommand("layout", "Print multipliers, primes, offsets and table rows per layer");
  AddInputOptions(cmd, s->in, true);
  cmd->add_option("--out", s->out, "Write the JSON here instead of stdout");
  cmd->callback([s] {
    Loaded l = Load(s->in);
    ojson doc;
    doc["profile"] = std::string(ProfileName(l.layout.profile));
    doc["compressed_vocab_size"] = l.layout.compressed_vocab_size;
    doc["pad"] = {{"raw", l.config.pad_id}, {"compressed", l.layout.pad}};
    doc["max_ngram"] = l.layout.max_ngram;
    doc["heads"] = l.layout.heads;
    doc["layers"] = ojson::array();
    for (const LayerLayout& layer : l.layout.layers) {
      doc["layers"].push_back({{"layer_id", layer.layer_id},
                               {"multipliers", layer.multipliers},
                               {"primes", layer.primes},
                               {"offsets", layer.offsets},
                               {"num_embeddings", layer.num_embeddings}});
    }
    Emit(doc, s->out);
  });
}

void AddHashCommand(CLI::App& app) {
  struct State {
    Inputs in;
    std::string ids, chunks, out, history_in, history_out, rollback, history_format = "engram";
    bool trace = false;
  };
  auto s = std::make_shared<State>();
  auto* cmd = app.add_subcommand("hash", "Hash a sequence of ids into table rows");
  AddInputOptions(cmd, s->in, true);
  cmd->add_option("--ids", s->ids,
                  "Comma-separated decimal ids (v4.1: -1 marks a masked/DEAD position); --ids= (or --ids '') is "
                  "the empty sequence: no rows, the history passed through")
      ->required();
  cmd->add_option("--chunks", s->chunks,
                  "Feed the ids through the state in these chunk sizes (comma-separated, >= 0, adding up to the "
                  "number of ids; default: one chunk)");
  cmd->add_option("--rollback", s->rollback,
                  "After each chunk, forget this many ids (comma-separated, one per chunk, >= 0; §HASH.6): the "
                  "ids of the next chunk continue from the earlier position; rows lists every position fed");
  cmd->add_flag("--trace", s->trace, "Also print every intermediate value per position");
  cmd->add_option("--out", s->out, "Write the JSON here instead of stdout");
  cmd->add_option("--history-in", s->history_in,
                  "Continue a sequence from this exported history (.json, else the binary form)");
  cmd->add_option("--history-out", s->history_out,
                  "Export the sequence's history after the ids (.json, else the binary form)");
  cmd->add_option("--history-format", s->history_format,
                  "The format of --history-in/--history-out (§CON.6): engram (§HASH.9, default), tt-metal (the "
                  "official position cache), vllm (lookback_token_ids), ds4 or lucebox (the n-gram tail; written "
                  "only), pypto (EngramSnapshot); the foreign ones are JSON")
      ->check(CLI::IsMember(HistoryFormatNames()));
  cmd->callback([s] {
    Loaded l = Load(s->in);
    std::vector<int64_t> raw = ParseIntList(s->ids, "--ids");
    std::vector<int64_t> ids = l.token_map ? CompressIds(l.layout, *l.token_map, raw) : raw;
    CheckCompressedIds(l.layout, ids);
    std::vector<int64_t> chunks = ParseIntList(s->chunks, "--chunks");
    if (chunks.empty()) chunks.push_back(static_cast<int64_t>(ids.size()));
    int64_t total = 0;
    for (int64_t c : chunks) {
      if (c < 0) throw Error("--chunks: chunk sizes must be >= 0, got " + std::to_string(c));
      total += c;
    }
    if (total != static_cast<int64_t>(ids.size())) {
      throw Error("--chunks: sizes add up to " + std::to_string(total) + " but there are " +
                  std::to_string(ids.size()) + " ids");
    }
    // §HASH.6 one rollback per chunk; the state retains as many ids as the
    // largest asks for, so that every rollback the list names can be done.
    std::vector<int64_t> rollbacks = ParseIntList(s->rollback, "--rollback");
    if (!rollbacks.empty() && rollbacks.size() != chunks.size()) {
      throw Error("--rollback: " + std::to_string(rollbacks.size()) + " values for " + std::to_string(chunks.size()) +
                  " chunks (give one per chunk of --chunks, 0 for none)");
    }
    size_t capacity = 0;
    for (size_t i = 0; i < rollbacks.size(); ++i) {
      if (rollbacks[i] < 0) {
        throw Error("--rollback: item " + std::to_string(i + 1) + " is " + std::to_string(rollbacks[i]) +
                    ": must be >= 0");
      }
      capacity = std::max(capacity, static_cast<size_t>(rollbacks[i]));
    }
    // §HASH.5 the chunks go through one per-sequence state; §HASH.9 it may
    // continue a sequence that another instance started.
    HashState state(l.layout, capacity);
    if (!s->history_in.empty()) {
      try {
        state = HashState::Import(l.layout, ReadHistoryFile(s->history_in, s->history_format, l), capacity);
      } catch (const Error& e) {
        // Name the file: the reference's message names only the field.
        const std::string what = e.what();
        throw Error(what.rfind(s->history_in, 0) == 0 ? what : s->history_in + ": " + what);
      }
    }
    std::vector<int64_t> rows;
    std::vector<PositionTrace> traces;
    size_t at = 0;
    for (size_t i = 0; i < chunks.size(); ++i) {
      const int64_t c = chunks[i];
      state.AppendTraced(std::span<const int64_t>(ids.data() + at, static_cast<size_t>(c)), rows, traces);
      at += static_cast<size_t>(c);
      if (!rollbacks.empty() && rollbacks[i] > 0) {
        // §HASH.6 cannot forget more than was consumed (the history imported included).
        if (rollbacks[i] > state.position()) {
          throw Error("--rollback: item " + std::to_string(i + 1) + " is " + std::to_string(rollbacks[i]) +
                      " but only " + std::to_string(state.position()) + " ids were consumed by then");
        }
        try {
          state.Rollback(static_cast<size_t>(rollbacks[i]));
        } catch (const Error& e) {  // e.g. into a --history-in, which carries only max_ngram - 1 ids
          throw Error("--rollback: item " + std::to_string(i + 1) + ": " + e.what());
        }
      }
    }
    ojson doc;
    doc["profile"] = std::string(ProfileName(l.layout.profile));
    ojson layer_ids = ojson::array();
    for (const LayerLayout& layer : l.layout.layers) layer_ids.push_back(layer.layer_id);
    doc["layers"] = layer_ids;
    doc["compressed_ids"] = ids;
    doc["rows"] = NestRows(l.layout, rows);
    if (s->trace) doc["trace"] = vectors::TraceJson(traces);
    if (!rollbacks.empty()) doc["rollback"] = rollbacks;
    doc["position"] = state.position();
    if (!s->history_out.empty()) WriteHistoryFile(s->history_out, state.Export(), s->history_format, l);
    Emit(doc, s->out);
  });
}

}  // namespace engram::cli
