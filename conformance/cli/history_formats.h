// spec/contract.md §CON.6 — the history hand-off formats of other ports,
// converted to and from the §HASH.9 history: `engram hash --history-format
// NAME --history-in/--history-out`.
#ifndef ENGRAM_CONFORMANCE_CLI_HISTORY_FORMATS_H_
#define ENGRAM_CONFORMANCE_CLI_HISTORY_FORMATS_H_

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/hash.h"
#include "reference/layout.h"
#include "reference/token_map.h"

namespace engram::cli {

// §CON.6 The format names: "engram" (§HASH.9 itself), "tt-metal" (the
// official code's position cache), "vllm" (lookback_token_ids), "ds4",
// "lucebox" (the n-gram tail) and "pypto" (EngramSnapshot).
const std::vector<std::string>& HistoryFormatNames();

// §CON.6 Reads a history in `format` (not "engram") from `doc`; `source`
// names the file in errors. The result carries `layout`'s fingerprint: the
// foreign formats carry none, so the user asserts that the layout is theirs.
// `token_map`: raw ids (vllm's lookback_token_ids) are compressed with it;
// without one they are taken as compressed ids. Throws engram::Error naming
// the file, key and value, or why the format cannot be read (ds4, lucebox:
// no position).
HashHistory ReadForeignHistory(const std::string& format, const nlohmann::json& doc, const Layout& layout,
                               const std::optional<TokenMap>& token_map, const std::string& source);

// §CON.6 Writes `history` in `format` (not "engram"). Throws engram::Error
// when the format cannot carry it (vllm with a token map: its ids are raw
// ids, and a compressed id has no single raw id).
nlohmann::ordered_json WriteForeignHistory(const std::string& format, const HashHistory& history, const Layout& layout,
                                           const std::optional<TokenMap>& token_map);

}  // namespace engram::cli

#endif  // ENGRAM_CONFORMANCE_CLI_HISTORY_FORMATS_H_
