/// \file
/// §ERR Untrusted input files: bounded reads and strict JSON (spec/bad_inputs.md).
///
/// Every file the tools read comes from someone else. Two rules hold for all of
/// them, whatever the loader:
///  - §ERR.4 a file is read up to a stated size limit per kind of file, so that
///    `--config /dev/zero` or a runaway pipe is refused, not read until memory
///    runs out; a directory given as a file is named as such;
///  - §ERR.5 JSON objects have unique keys: a second `"engram_pad_id"` is a
///    refusal, never a silent last-wins.
#ifndef ENGRAM_REFERENCE_INPUT_FILES_H_
#define ENGRAM_REFERENCE_INPUT_FILES_H_

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace engram {

/// §ERR.4 The kinds of input file, each with its own size limit.
enum class InputKind {
  kConfig,        ///< config.json / an EngramConfig document: 16 MiB
  kTokenizer,     ///< a Hugging Face tokenizer.json: 512 MiB
  kTokenMap,      ///< a token-map JSON: 16 MiB
  kContract,      ///< a hash contract: 64 MiB
  kHistory,       ///< a §HASH.9 history (JSON or binary): 64 MiB
  kVectorFile,    ///< a vector suite file or a JSON Schema: 256 MiB
  kManifest,      ///< MANIFEST.sha256: 1 MiB
  kExpectFail,    ///< an expected-failures list: 16 MiB
  kFusionInput,   ///< `engram gate --input`: 256 MiB
};

/// §ERR.4 The size limit of `kind`, in bytes.
uint64_t InputSizeLimit(InputKind kind);
/// What the kind is called in messages, e.g. "configuration file".
std::string InputKindName(InputKind kind);

/// §ERR.4 Reads the whole file at `path`. Throws engram::Error naming the path
/// when it does not exist, is a directory ("is a directory"), cannot be read,
/// or holds more than InputSizeLimit(kind) bytes. Pipes and devices are read
/// up to the limit (one byte more is a refusal), never beyond it.
/// `regular_only`: refuse anything but a regular file, without blocking on a
/// FIFO (the files a MANIFEST.sha256 lists, §VEC.9; base/fileio.h).
std::string ReadInputFile(const std::filesystem::path& path, InputKind kind, bool regular_only = false);

/// §ERR.5 Parses JSON `text`; `source` names it in messages (a file name).
/// Refuses malformed JSON ("<source>: malformed JSON: <parser message>") and
/// an object with a repeated key ("<source>: duplicate key 'k' at text_config",
/// naming the object by its path).
nlohmann::json ParseJson(std::string_view text, std::string_view source);
/// The same, keeping every object's key order (vector files, §CONF.1).
nlohmann::ordered_json ParseOrderedJson(std::string_view text, std::string_view source);

/// §ERR.5 The check behind ParseJson for a SAX reader: call Start/End for every
/// object and array and Key for every key; Key throws engram::Error on a
/// repeated key. Element counting for paths is done by Value.
class JsonKeyChecker {
 public:
  /// `source` names the document in messages (a file name).
  explicit JsonKeyChecker(std::string source) : source_(std::move(source)) {}
  void StartObject();  ///< an object begins
  void StartArray();   ///< an array begins
  void End();          ///< the innermost object or array ends
  /// A key of the innermost object; throws engram::Error when the object has it already.
  void Key(const std::string& key);
  void Value();  ///< a scalar element (or a finished container) in the current array
  /// The path of the current position, e.g. "model.vocab" or "added_tokens[3]".
  std::string Path() const;

 private:
  /// \cond INTERNAL (Doxygen would list this private struct in the class summary
  /// and link a section it does not write)
  struct Level {
    bool object = false;
    size_t index = 0;
    std::string key;
    std::set<std::string> keys;  // the keys seen in this object
  };
  std::string source_;
  std::vector<Level> levels_;
  /// \endcond
};

}  // namespace engram

#endif  // ENGRAM_REFERENCE_INPUT_FILES_H_
