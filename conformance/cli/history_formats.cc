// spec/contract.md §CON.6 — the hand-off formats of other ports.
#include "conformance/cli/history_formats.h"

#include <algorithm>

#include "base/error.h"

namespace engram::cli {

using ojson = nlohmann::ordered_json;

const std::vector<std::string>& HistoryFormatNames() {
  static const std::vector<std::string> names = {"engram", "tt-metal", "vllm", "ds4", "lucebox", "pypto"};
  return names;
}

namespace {

// lucebox's DeepSeek4EngramHistory::kMaxTail: the tail is 7 slots whatever max_ngram is.
constexpr size_t kLuceboxTail = 7;
// §CON.6 the position cache written for tt-metal holds one entry per position:
// a bound keeps a history of a long sequence from turning into gigabytes.
constexpr int64_t kMaxCacheExport = int64_t{1} << 24;

[[noreturn]] void Bad(const std::string& source, const std::string& key, const std::string& what) {
  throw Error(source + ": key '" + key + "': " + what);
}

int64_t Integer(const nlohmann::json& doc, const std::string& source, const std::string& key, int64_t lo) {
  if (!doc.contains(key)) Bad(source, key, "missing");
  const nlohmann::json& v = doc[key];
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX}) ||
      v.get<int64_t>() < lo) {
    Bad(source, key, "expected an integer >= " + std::to_string(lo) + ", got " + v.dump());
  }
  return v.get<int64_t>();
}

std::vector<int64_t> IdList(const nlohmann::json& doc, const std::string& source, const std::string& key) {
  if (!doc.contains(key) || !doc[key].is_array()) {
    Bad(source, key, doc.contains(key) ? "expected a list of integers, got " + doc[key].dump().substr(0, 60) : "missing");
  }
  std::vector<int64_t> out;
  for (size_t i = 0; i < doc[key].size(); ++i) {
    const nlohmann::json& e = doc[key][i];
    if (!e.is_number_integer() || (e.is_number_unsigned() && e.get<uint64_t>() > uint64_t{INT64_MAX})) {
      Bad(source, key, "entry " + std::to_string(i) + " is not a 64-bit integer: " + e.dump());
    }
    out.push_back(e.get<int64_t>());
  }
  return out;
}

size_t Keep(const Layout& layout, int64_t position) {
  return static_cast<size_t>(std::min<int64_t>(position, layout.max_ngram - 1));
}

}  // namespace

HashHistory ReadForeignHistory(const std::string& format, const nlohmann::json& doc, const Layout& layout,
                               const std::optional<TokenMap>& token_map, const std::string& source) {
  if (layout.profile != Profile::kV41) {
    throw Error("--history-format " + format + ": the ports that use it are v4.1 ports; the layout is " +
                std::string(ProfileName(layout.profile)));
  }
  if (!doc.is_object()) throw Error(source + ": a " + format + " history is a JSON object");
  HashHistory h;
  h.layout_fingerprint = LayoutFingerprint(layout);
  if (format == "ds4" || format == "lucebox") {
    // §CON.6 the tail holds ids and DEAD, no position: a DEAD slot is either
    // before the start or a masked position, and the position the next id
    // takes (§HASH.9 P + from) cannot be known.
    throw Error(source + ": --history-format " + format + " cannot be read: its tail carries no position (a DEAD " +
                "slot is the start of the sequence or a masked position), and a §HASH.9 history must say where " +
                "the sequence stands; it can only be written (--history-out)");
  }
  if (format == "tt-metal") {
    // The official code's cache: the compressed id (or DEAD) of every
    // position 0 .. start_pos - 1; the next chunk starts at start_pos.
    h.position = Integer(doc, source, "start_pos", 0);
    const std::vector<int64_t> cache = IdList(doc, source, "cache");
    if (static_cast<int64_t>(cache.size()) < h.position) {
      Bad(source, "cache", "has " + std::to_string(cache.size()) + " entries but start_pos is " +
                               std::to_string(h.position) + " (one entry per position before it)");
    }
    const size_t keep = Keep(layout, h.position);
    h.ids.assign(cache.begin() + static_cast<std::ptrdiff_t>(h.position - static_cast<int64_t>(keep)),
                 cache.begin() + static_cast<std::ptrdiff_t>(h.position));
  } else if (format == "vllm") {
    // lookback_token_ids: the ids just before the chunk, newest first, -1
    // where there is none (before the start); lookback_dead_mask: which are
    // masked (DEAD). The ids are raw tokenizer ids.
    h.position = Integer(doc, source, "position", 0);
    const std::vector<int64_t> lookback = IdList(doc, source, "lookback_token_ids");
    std::vector<bool> dead(lookback.size(), false);
    if (doc.contains("lookback_dead_mask")) {
      const nlohmann::json& m = doc["lookback_dead_mask"];
      if (!m.is_array() || m.size() != lookback.size()) {
        Bad(source, "lookback_dead_mask", "expected " + std::to_string(lookback.size()) + " booleans, got " +
                                              m.dump().substr(0, 60));
      }
      for (size_t i = 0; i < m.size(); ++i) {
        if (!m[i].is_boolean()) Bad(source, "lookback_dead_mask", "entry " + std::to_string(i) + " is " + m[i].dump());
        dead[i] = m[i].get<bool>();
      }
    }
    const size_t keep = Keep(layout, h.position);
    if (lookback.size() < keep) {
      Bad(source, "lookback_token_ids", "has " + std::to_string(lookback.size()) + " ids but position " +
                                            std::to_string(h.position) + " needs the " + std::to_string(keep) +
                                            " before it");
    }
    for (size_t i = 0; i < lookback.size(); ++i) {
      const bool before_start = static_cast<int64_t>(i) >= h.position;
      if (before_start && (lookback[i] != -1 || dead[i])) {
        Bad(source, "lookback_token_ids", "entry " + std::to_string(i) + " is " + std::to_string(lookback[i]) +
                                              " but lies before the start of the sequence (position " +
                                              std::to_string(h.position) + "): expected -1, not dead");
      }
    }
    for (size_t i = keep; i-- > 0;) {  // oldest first
      if (dead[i]) {
        h.ids.push_back(kDead);
      } else {
        if (lookback[i] < 0) {
          Bad(source, "lookback_token_ids", "entry " + std::to_string(i) + " is " + std::to_string(lookback[i]) +
                                                " inside the sequence and not marked dead");
        }
        h.ids.push_back(token_map ? token_map->Lookup(lookback[i], source + ": key 'lookback_token_ids' entry " +
                                                                       std::to_string(i))
                                  : lookback[i]);
      }
    }
  } else if (format == "pypto") {
    // EngramSnapshot: position, retained_start and the retained compressed
    // ids (DEAD = -1), oldest first; position - retained_start of them.
    h.position = Integer(doc, source, "position", 0);
    const int64_t start = Integer(doc, source, "retained_start", 0);
    const std::vector<int64_t> history = IdList(doc, source, "history");
    if (start > h.position || static_cast<int64_t>(history.size()) != h.position - start) {
      Bad(source, "history", "has " + std::to_string(history.size()) + " ids but position - retained_start is " +
                                 std::to_string(h.position - start));
    }
    const size_t keep = Keep(layout, h.position);
    if (history.size() < keep) {
      Bad(source, "history", "retains " + std::to_string(history.size()) + " ids but position " +
                                 std::to_string(h.position) + " needs the " + std::to_string(keep) + " before it");
    }
    h.ids.assign(history.end() - static_cast<std::ptrdiff_t>(keep), history.end());
  } else {
    throw Error("--history-format: '" + format + "' is not a known format");
  }
  return h;  // the ids are checked by HashState::Import (§HASH.9)
}

ojson WriteForeignHistory(const std::string& format, const HashHistory& history, const Layout& layout,
                          const std::optional<TokenMap>& token_map) {
  if (layout.profile != Profile::kV41) {
    throw Error("--history-format " + format + ": the ports that use it are v4.1 ports; the layout is " +
                std::string(ProfileName(layout.profile)));
  }
  const size_t n = history.ids.size();
  ojson doc;
  if (format == "ds4" || format == "lucebox") {
    // Newest first, DEAD for no token (before the start, or masked).
    const size_t slots = format == "ds4" ? static_cast<size_t>(layout.max_ngram - 1) : kLuceboxTail;
    if (static_cast<size_t>(layout.max_ngram - 1) > slots) {
      throw Error("--history-format lucebox: its tail holds 7 ids, max_ngram - 1 is " +
                  std::to_string(layout.max_ngram - 1));
    }
    ojson tail = ojson::array();
    for (size_t i = 0; i < slots; ++i) tail.push_back(i < n ? history.ids[n - 1 - i] : kDead);
    doc["tail"] = tail;
  } else if (format == "tt-metal") {
    if (history.position > kMaxCacheExport) {
      throw Error("--history-format tt-metal: the position cache holds one entry per position, and position " +
                  std::to_string(history.position) + " is over the 2^24 this tool writes");
    }
    // Positions before the last max_ngram - 1 are never read again by the
    // next chunk's hash; the §HASH.9 history does not hold them: written DEAD.
    ojson cache = ojson::array();
    const int64_t first_known = history.position - static_cast<int64_t>(n);
    for (int64_t p = 0; p < history.position; ++p) {
      cache.push_back(p < first_known ? kDead : history.ids[static_cast<size_t>(p - first_known)]);
    }
    doc["start_pos"] = history.position;
    doc["cache"] = cache;
  } else if (format == "vllm") {
    if (token_map) {
      throw Error("--history-format vllm: lookback_token_ids are raw tokenizer ids, and a compressed id has no " +
                  std::string("single raw id (the token map is many-to-one); without --token-map the ids are written "
                              "as the compressed ids they are"));
    }
    ojson ids = ojson::array(), dead = ojson::array();
    for (size_t i = 0; i < static_cast<size_t>(layout.max_ngram - 1); ++i) {
      const bool have = i < n;
      const int64_t id = have ? history.ids[n - 1 - i] : -1;
      ids.push_back(id == kDead ? -1 : id);
      dead.push_back(have && id == kDead);
    }
    doc["position"] = history.position;
    doc["lookback_token_ids"] = ids;
    doc["lookback_dead_mask"] = dead;
  } else if (format == "pypto") {
    doc["position"] = history.position;
    doc["retained_start"] = history.position - static_cast<int64_t>(n);
    doc["history"] = history.ids;
  } else {
    throw Error("--history-format: '" + format + "' is not a known format");
  }
  return doc;
}

}  // namespace engram::cli
