// Tests for spec/config.md (§CFG.1-§CFG.5).
//
// Expected values are the published configuration figures (spec/sources.md
// [SRC-V41-CONFIG], [SRC-DEMO], spec/config.md §CFG.2-§CFG.3 tables) and the refusal contract of §CFG.4:
// every message names the source, the key and the offending value.
#include "reference/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/program_paths.h"

namespace engram {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

constexpr const char* kSrc = "configs/under_test.json";

// The DeepSeek-V4.1-Flash inference config.json (ModelArgs fields at top level).
json V41Inference() {
  return json::parse(R"({
    "vocab_size": 129280, "dim": 5120, "n_layers": 40, "hc_mult": 4, "norm_eps": 1e-20,
    "engram_layer_ids": [1, 14], "engram_vocab_size": 16000000,
    "engram_num_embeddings": [384006168, 384016682], "engram_max_ngram_size": 4,
    "engram_n_heads": 8, "engram_head_dim": 256, "engram_pad_id": 2,
    "engram_compressed_vocab_size": 99092, "rope_theta": 10000
  })");
}

// The Hugging Face shape: engram keys under text_config, HF names for the rest.
json V41HuggingFace() {
  return json::parse(R"({
    "architectures": ["DeepseekV4ForCausalLM"], "model_type": "deepseek_v4",
    "text_config": {
      "vocab_size": 129280, "hidden_size": 5120, "rms_norm_eps": 1e-06, "hc_mult": 4,
      "engram_layer_ids": [1, 14], "engram_vocab_size": 16000000,
      "engram_num_embeddings": [384006168, 384016682], "engram_max_ngram_size": 4,
      "engram_n_heads": 8, "engram_head_dim": 256, "engram_pad_token_id": 2,
      "engram_compressed_vocab_size": 99092
    }
  })");
}

// Expects ParseConfig(doc) to refuse with a message naming source, key and value.
void ExpectRefused(const json& doc, const std::vector<std::string>& parts,
                   std::optional<Profile> profile = std::nullopt) {
  try {
    ParseConfig(doc, kSrc, profile);
    ADD_FAILURE() << "expected a refusal of " << doc.dump();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(kSrc));
    for (const std::string& part : parts) EXPECT_THAT(e.what(), HasSubstr(part)) << doc.dump();
  }
}

// ---------------------------------------------------------------------------
// §CFG.2 v4.1
// ---------------------------------------------------------------------------

TEST(ConfigV41, InferenceShape_CFG2) {
  const EngramConfig c = ParseConfig(V41Inference(), kSrc);
  EXPECT_EQ(c.profile, Profile::kV41);
  EXPECT_EQ(c.source, kSrc);
  EXPECT_EQ(c.layer_ids, (std::vector<int64_t>{1, 14}));
  EXPECT_EQ(c.max_ngram, 4);
  EXPECT_EQ(c.heads, 8);
  EXPECT_EQ(c.orders(), 3);
  EXPECT_EQ(c.columns(), 24);
  EXPECT_EQ(c.bases, (std::vector<int64_t>{16000000, 16000000, 16000000}));
  EXPECT_EQ(c.pad_id, 2);
  EXPECT_EQ(c.seed, 0);
  ASSERT_TRUE(c.compressed_vocab_size.has_value());
  EXPECT_EQ(*c.compressed_vocab_size, 99092);
  EXPECT_EQ(c.num_embeddings, (std::vector<int64_t>{384006168, 384016682}));
  EXPECT_EQ(c.head_dim, 256);
  EXPECT_EQ(c.hidden_size, 5120);
  EXPECT_EQ(c.hc_mult, 4);
  EXPECT_DOUBLE_EQ(c.norm_eps, 1e-20);
  EXPECT_EQ(c.vocab_size, 129280);
}

TEST(ConfigV41, HuggingFaceShapeUnderTextConfig_CFG2) {
  const EngramConfig c = ParseConfig(V41HuggingFace(), kSrc);
  EXPECT_EQ(c.profile, Profile::kV41);
  EXPECT_EQ(c.layer_ids, (std::vector<int64_t>{1, 14}));
  EXPECT_EQ(c.bases, (std::vector<int64_t>{16000000, 16000000, 16000000}));
  EXPECT_EQ(c.pad_id, 2);  // engram_pad_token_id
  EXPECT_EQ(c.hidden_size, 5120);  // hidden_size
  EXPECT_DOUBLE_EQ(c.norm_eps, 1e-6);  // rms_norm_eps
  EXPECT_EQ(c.num_embeddings, (std::vector<int64_t>{384006168, 384016682}));
  EXPECT_EQ(*c.compressed_vocab_size, 99092);
}

TEST(ConfigV41, BuiltinEqualsShippedInferenceConfig_CFG2) {
  const EngramConfig a = V41FlashConfig();
  const EngramConfig b = ParseConfig(V41Inference(), kSrc);
  EXPECT_EQ(a.layer_ids, b.layer_ids);
  EXPECT_EQ(a.bases, b.bases);
  EXPECT_EQ(a.num_embeddings, b.num_embeddings);
  EXPECT_EQ(a.max_ngram, b.max_ngram);
  EXPECT_EQ(a.heads, b.heads);
  EXPECT_EQ(a.pad_id, b.pad_id);
  EXPECT_EQ(a.compressed_vocab_size, b.compressed_vocab_size);
  EXPECT_EQ(a.head_dim, b.head_dim);
}

// The shipped file users pass with --config and the reference's built-in
// document are one configuration: compared as JSON values (key order free).
TEST(ConfigV41, ShippedFileIsTheBuiltinDocument_CFG2) {
  const json shipped = ReadJsonFile(std::string(ENGRAM_SOURCE_DIR) + "/conformance/configs/v41-flash.json",
                                    engram::InputKind::kConfig);
  EXPECT_EQ(shipped, json(V41FlashConfigJson()));
}

TEST(ConfigV41, BothPadSpellingsAgreeing_CFG2) {
  json doc = V41Inference();
  doc["engram_pad_token_id"] = 2;
  EXPECT_EQ(ParseConfig(doc, kSrc).pad_id, 2);
  json hf = V41HuggingFace();
  hf["text_config"].erase("engram_pad_token_id");
  hf["text_config"]["engram_pad_id"] = 5;
  EXPECT_EQ(ParseConfig(hf, kSrc).pad_id, 5);
}

TEST(ConfigV41, PadSpellingsConflictIsRefused_CFG2) {
  json doc = V41Inference();
  doc["engram_pad_token_id"] = 3;
  ExpectRefused(doc, {"engram_pad_id", "engram_pad_token_id", "2", "3"});
}

TEST(ConfigV41, MissingPadIsRefused_CFG2) {
  json doc = V41Inference();
  doc.erase("engram_pad_id");
  ExpectRefused(doc, {"engram_pad"});
}

// §CFG.2 synonym pairs with different values MUST be refused.
TEST(ConfigV41, SynonymConflictsAreRefused_CFG2) {
  json doc = V41Inference();
  doc["hidden_size"] = 4096;
  ExpectRefused(doc, {"hidden_size", "4096", "5120"});
  json eps = V41Inference();
  eps["rms_norm_eps"] = 1e-6;
  ExpectRefused(eps, {"rms_norm_eps"});
}

// §CFG.2 the Required column: engram_num_embeddings and
// engram_compressed_vocab_size are optional (checked by §LAY.4 when present).
TEST(ConfigV41, OptionalChecksMayBeAbsent_CFG2) {
  json doc = V41Inference();
  doc.erase("engram_num_embeddings");
  doc.erase("engram_compressed_vocab_size");
  const EngramConfig c = ParseConfig(doc, kSrc);
  EXPECT_TRUE(c.num_embeddings.empty());
  EXPECT_FALSE(c.compressed_vocab_size.has_value());
}

TEST(ConfigV41, SeedKeyIsIgnoredAndUnknownKeysToo_CFG2) {
  json doc = V41Inference();
  doc["seed"] = 77;
  doc["some_future_key"] = {{"x", 1}};
  EXPECT_EQ(ParseConfig(doc, kSrc).seed, 0);
}

TEST(ConfigV41, VocabSizeListIsRefused_CFG2) {
  json doc = V41Inference();
  doc["engram_vocab_size"] = {16000000, 16000000, 16000000};
  ExpectRefused(doc, {"engram_vocab_size", "[16000000,16000000,16000000]"});
}

// §CFG.1.1 the container is text_config when it holds engram_ keys; keys
// outside it are ignored, except an engram_ key at both levels with different values.
TEST(ConfigV41, TextConfigIsTheContainer_CFG1) {
  json doc = V41HuggingFace();
  doc["dim"] = 1234;  // outside the container: ignored
  EXPECT_EQ(ParseConfig(doc, kSrc).hidden_size, 5120);
  json both = V41HuggingFace();
  both["engram_n_heads"] = 4;  // top level disagrees with text_config
  ExpectRefused(both, {"engram_n_heads", "4", "8"});
}

// §CFG.4: the key is named with its container.
TEST(ConfigV41, RefusalNamesTheContainer_CFG4) {
  json doc = V41HuggingFace();
  doc["text_config"]["engram_n_heads"] = 0;
  ExpectRefused(doc, {"text_config.engram_n_heads", "0"});
}

// ---------------------------------------------------------------------------
// §CFG.3 demo-v1
// ---------------------------------------------------------------------------

void ExpectDemoDefaults(const EngramConfig& c) {
  EXPECT_EQ(c.profile, Profile::kDemoV1);
  EXPECT_EQ(c.bases, (std::vector<int64_t>{646400, 646400}));
  EXPECT_EQ(c.max_ngram, 3);
  EXPECT_EQ(c.n_embed_per_ngram, 512);
  EXPECT_EQ(c.heads, 8);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.layer_ids, (std::vector<int64_t>{1, 15}));
  EXPECT_EQ(c.pad_id, 2);
  EXPECT_EQ(c.seed, 0);
  EXPECT_EQ(c.kernel_size, 4);
  EXPECT_EQ(c.hidden_size, 1024);
  EXPECT_EQ(c.hc_mult, 4);
  EXPECT_EQ(c.vocab_size, 129280);
  EXPECT_TRUE(c.num_embeddings.empty());
  EXPECT_FALSE(c.compressed_vocab_size.has_value());
}

TEST(ConfigDemo, EmptyObjectWithOverrideGivesDefaults_CFG3) {
  ExpectDemoDefaults(ParseConfig(json::object(), kSrc, Profile::kDemoV1));
  ExpectDemoDefaults(DemoV1Config());
}

// As for v4.1: the shipped demo file and the built-in defaults are one configuration.
TEST(ConfigDemo, ShippedFileIsTheBuiltinDocument_CFG3) {
  const json shipped = ReadJsonFile(std::string(ENGRAM_SOURCE_DIR) + "/conformance/configs/demo-v1.json",
                                    engram::InputKind::kConfig);
  EXPECT_EQ(shipped, json(DemoV1ConfigJson()));
}

TEST(ConfigDemo, DetectedFromOneMarkerWithDefaults_CFG3) {
  ExpectDemoDefaults(ParseConfig(json{{"layer_ids", {1, 15}}}, kSrc));
}

TEST(ConfigDemo, Overrides_CFG3) {
  const json doc = {{"engram_vocab_size", {101, 202, 303}},
                    {"max_ngram_size", 4},
                    {"n_embed_per_ngram", 96},
                    {"n_head_per_ngram", 4},
                    {"layer_ids", {0, 7, 3}},
                    {"pad_id", 0},
                    {"seed", 42},
                    {"kernel_size", 2},
                    {"hidden_size", 256},
                    {"hc_mult", 2},
                    {"vocab_size", 5000},
                    {"unrelated", "ignored"}};
  const EngramConfig c = ParseConfig(doc, kSrc);
  EXPECT_EQ(c.profile, Profile::kDemoV1);
  EXPECT_EQ(c.bases, (std::vector<int64_t>{101, 202, 303}));
  EXPECT_EQ(c.max_ngram, 4);
  EXPECT_EQ(c.n_embed_per_ngram, 96);
  EXPECT_EQ(c.heads, 4);
  EXPECT_EQ(c.head_dim, 24);
  EXPECT_EQ(c.layer_ids, (std::vector<int64_t>{0, 7, 3}));
  EXPECT_EQ(c.pad_id, 0);
  EXPECT_EQ(c.seed, 42);
  EXPECT_EQ(c.kernel_size, 2);
  EXPECT_EQ(c.hidden_size, 256);
  EXPECT_EQ(c.hc_mult, 2);
  EXPECT_EQ(c.vocab_size, 5000);
}

// §CFG.3 consequence: max_ngram_size other than 3 needs its own engram_vocab_size.
TEST(ConfigDemo, MaxNgramWithoutBasesIsRefused_CFG3) {
  ExpectRefused(json{{"max_ngram_size", 4}}, {"engram_vocab_size", "2"});
}

TEST(ConfigDemo, NullPadIsRefused_CFG3) {
  ExpectRefused(json{{"layer_ids", {1}}, {"pad_id", nullptr}}, {"pad_id", "null"});
}

// ---------------------------------------------------------------------------
// §CFG.1 profile detection and override
// ---------------------------------------------------------------------------

TEST(ConfigProfile, Names_CFG1) {
  EXPECT_EQ(ProfileName(Profile::kV41), "v4.1");
  EXPECT_EQ(ProfileName(Profile::kDemoV1), "demo-v1");
  EXPECT_EQ(ParseProfile("v4.1"), Profile::kV41);
  EXPECT_EQ(ParseProfile("demo-v1"), Profile::kDemoV1);
  EXPECT_EQ(ParseProfile("v4"), std::nullopt);
  EXPECT_EQ(ParseProfile("V4.1"), std::nullopt);
  EXPECT_EQ(ParseProfile(""), std::nullopt);
}

TEST(ConfigProfile, Detection_CFG1) {
  EXPECT_EQ(ParseConfig(V41Inference(), kSrc).profile, Profile::kV41);
  EXPECT_EQ(ParseConfig(V41HuggingFace(), kSrc).profile, Profile::kV41);
  EXPECT_EQ(ParseConfig(json{{"n_head_per_ngram", 8}}, kSrc).profile, Profile::kDemoV1);
  EXPECT_EQ(ParseConfig(json{{"max_ngram_size", 3}, {"engram_vocab_size", {10, 10}}}, kSrc).profile,
            Profile::kDemoV1);
}

TEST(ConfigProfile, UndetectableIsRefused_CFG1) {
  // Neither kind of marker (engram_vocab_size alone is shared by both profiles).
  ExpectRefused(json{{"engram_vocab_size", 16000000}}, {"--profile"});
  ExpectRefused(json::object(), {"--profile"});
  // Both kinds.
  json both = V41Inference();
  both["layer_ids"] = {1, 2};
  ExpectRefused(both, {"--profile"});
}

TEST(ConfigProfile, OverrideSkipsDetection_CFG1) {
  json both = V41Inference();
  both["layer_ids"] = {5};
  both["n_embed_per_ngram"] = 16;
  both["n_head_per_ngram"] = 2;
  const EngramConfig v = ParseConfig(both, kSrc, Profile::kV41);
  EXPECT_EQ(v.profile, Profile::kV41);
  EXPECT_EQ(v.layer_ids, (std::vector<int64_t>{1, 14}));
  both["engram_vocab_size"] = {50, 60};  // the demo's list form
  const EngramConfig d = ParseConfig(both, kSrc, Profile::kDemoV1);
  EXPECT_EQ(d.profile, Profile::kDemoV1);
  EXPECT_EQ(d.layer_ids, (std::vector<int64_t>{5}));
  EXPECT_EQ(d.heads, 2);
  EXPECT_EQ(d.bases, (std::vector<int64_t>{50, 60}));
}

// ---------------------------------------------------------------------------
// §CFG.4 validation: one test per rule; messages name source, key and value
// ---------------------------------------------------------------------------

TEST(ConfigValidation, MaxNgramBelowTwo_CFG4) {
  json doc = V41Inference();
  doc["engram_max_ngram_size"] = 1;
  ExpectRefused(doc, {"engram_max_ngram_size", "1"});
  ExpectRefused(json{{"max_ngram_size", 1}, {"engram_vocab_size", json::array()}}, {"max_ngram_size", "1"});
}

TEST(ConfigValidation, ZeroHeads_CFG4) {
  json doc = V41Inference();
  doc["engram_n_heads"] = 0;
  ExpectRefused(doc, {"engram_n_heads", "0"});
  ExpectRefused(json{{"n_head_per_ngram", 0}}, {"n_head_per_ngram", "0"});
}

TEST(ConfigValidation, BaseBelowTwo_CFG4) {
  json doc = V41Inference();
  doc["engram_vocab_size"] = 1;
  ExpectRefused(doc, {"engram_vocab_size", "1"});
  ExpectRefused(json{{"layer_ids", {1}}, {"engram_vocab_size", {646400, -7}}}, {"engram_vocab_size", "-7"});
}

// §CFG.4 item 3: bases up to 2^40 - 1 are valid configurations; 2^40 is not.
TEST(ConfigValidation, BaseUpperBound_CFG4) {
  json ok = {{"layer_ids", {1}}, {"engram_vocab_size", {(int64_t{1} << 40) - 1, 646400}}};
  EXPECT_NO_THROW(ParseConfig(ok, kSrc));
  json bad = {{"layer_ids", {1}}, {"engram_vocab_size", {int64_t{1} << 40, 646400}}};
  ExpectRefused(bad, {"engram_vocab_size", "1099511627776"});
}

TEST(ConfigValidation, DuplicateLayerIds_CFG4) {
  json doc = V41Inference();
  doc["engram_layer_ids"] = {14, 14};
  ExpectRefused(doc, {"engram_layer_ids", "14"});
  ExpectRefused(json{{"layer_ids", {3, 9, 3}}}, {"layer_ids", "3"});
}

TEST(ConfigValidation, NegativeLayerId_CFG4) {
  json doc = V41Inference();
  doc["engram_layer_ids"] = {1, -3};
  ExpectRefused(doc, {"engram_layer_ids", "-3"});
  ExpectRefused(json{{"layer_ids", {-1}}}, {"layer_ids", "-1"});
}

TEST(ConfigValidation, EmptyLayerIds_CFG4) {
  json doc = V41Inference();
  doc["engram_layer_ids"] = json::array();
  doc["engram_num_embeddings"] = json::array();
  ExpectRefused(doc, {"engram_layer_ids", "[]"});
}

TEST(ConfigValidation, NumEmbeddingsWrongLength_CFG4) {
  json doc = V41Inference();
  doc["engram_num_embeddings"] = {384006168};
  ExpectRefused(doc, {"engram_num_embeddings", "384006168"});
}

TEST(ConfigValidation, NumEmbeddingsEntryBelowOne_CFG4) {
  json doc = V41Inference();
  doc["engram_num_embeddings"] = {0, 384016682};
  ExpectRefused(doc, {"engram_num_embeddings", "0"});
}

TEST(ConfigValidation, CompressedVocabBelowOne_CFG4) {
  json doc = V41Inference();
  doc["engram_compressed_vocab_size"] = 0;
  ExpectRefused(doc, {"engram_compressed_vocab_size", "0"});
}

TEST(ConfigValidation, HeadDimBelowOne_CFG4) {
  json doc = V41Inference();
  doc["engram_head_dim"] = 0;
  ExpectRefused(doc, {"engram_head_dim", "0"});
}

TEST(ConfigValidation, NEmbedNotDivisibleByHeads_CFG4) {
  ExpectRefused(json{{"n_embed_per_ngram", 10}, {"n_head_per_ngram", 8}}, {"n_embed_per_ngram", "10"});
  ExpectRefused(json{{"n_embed_per_ngram", 0}}, {"n_embed_per_ngram", "0"});
}

TEST(ConfigValidation, NegativePad_CFG4) {
  json doc = V41Inference();
  doc["engram_pad_id"] = -2;
  ExpectRefused(doc, {"engram_pad_id", "-2"});
  ExpectRefused(json{{"layer_ids", {1}}, {"pad_id", -1}}, {"pad_id", "-1"});
}

TEST(ConfigValidation, NegativeSeed_CFG4) {
  ExpectRefused(json{{"layer_ids", {1}}, {"seed", -1}}, {"seed", "-1"});
}

TEST(ConfigValidation, LayerSeedOverflow_CFG4) {
  const int64_t max_ok = std::numeric_limits<int64_t>::max() / 10007;
  EXPECT_NO_THROW(ParseConfig(json{{"layer_ids", {max_ok}}}, kSrc));
  ExpectRefused(json{{"layer_ids", {max_ok + 1}}}, {"layer_ids", std::to_string(max_ok + 1)});
  ExpectRefused(json{{"layer_ids", {max_ok}}, {"seed", 10007}}, {"layer_ids", std::to_string(max_ok)});
}

TEST(ConfigValidation, SizesBelowOne_CFG4) {
  ExpectRefused(json{{"layer_ids", {1}}, {"hidden_size", 0}}, {"hidden_size", "0"});
  ExpectRefused(json{{"layer_ids", {1}}, {"hc_mult", 0}}, {"hc_mult", "0"});
  ExpectRefused(json{{"layer_ids", {1}}, {"kernel_size", 0}}, {"kernel_size", "0"});
  ExpectRefused(json{{"layer_ids", {1}}, {"vocab_size", 0}}, {"vocab_size", "0"});
  // §CFG.4.8 applies to v4.1 too, "when present".
  json doc = V41Inference();
  doc["dim"] = 0;
  ExpectRefused(doc, {"dim", "0"});
  json hc = V41Inference();
  hc["hc_mult"] = -1;
  ExpectRefused(hc, {"hc_mult", "-1"});
}

// §CFG.5 integers must be written as integers.
TEST(ConfigValidation, FloatWhereIntegerExpected_CFG5) {
  json doc = V41Inference();
  doc["engram_n_heads"] = 8.0;
  ExpectRefused(doc, {"engram_n_heads", "8.0"});
  json list = V41Inference();
  list["engram_layer_ids"] = json::parse("[1, 14.0]");
  ExpectRefused(list, {"engram_layer_ids", "14.0"});
  ExpectRefused(json::parse(R"({"max_ngram_size": 3.0})"), {"max_ngram_size", "3.0"});
  ExpectRefused(json::parse(R"({"layer_ids": [1], "seed": 1e3})"), {"seed", "1000.0"});
}

TEST(ConfigValidation, NonNumbersWhereIntegerExpected_CFG5) {
  json b = V41Inference();
  b["engram_max_ngram_size"] = true;
  ExpectRefused(b, {"engram_max_ngram_size", "true"});
  json s = V41Inference();
  s["engram_head_dim"] = "256";
  ExpectRefused(s, {"engram_head_dim", "\"256\""});
  ExpectRefused(json{{"layer_ids", "1,15"}}, {"layer_ids", "\"1,15\""});
}

// §CFG.5 int32 fields: the message shows the value as written, not a clamped one.
TEST(ConfigValidation, Int32FieldOutOfRange_CFG5) {
  json doc = V41Inference();
  doc["engram_n_heads"] = int64_t{1} << 40;
  ExpectRefused(doc, {"engram_n_heads", "1099511627776"});
}

TEST(ConfigValidation, UnsignedOverflow_CFG5) {
  json doc = V41Inference();
  doc["engram_vocab_size"] = json::parse("18446744073709551615");
  ExpectRefused(doc, {"engram_vocab_size", "18446744073709551615"});
}

TEST(ConfigValidation, NonObjectDocument_CFG4) {
  ExpectRefused(json::array({1, 2}), {"object", "array"});
  ExpectRefused(json(42), {"object"});
  ExpectRefused(json(nullptr), {"object"});
}

// ---------------------------------------------------------------------------
// LoadConfig: errors name the path
// ---------------------------------------------------------------------------

class LoadConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("engram_config_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path Write(const std::string& name, const std::string& text) {
    const std::filesystem::path p = dir_ / name;
    std::ofstream(p) << text;
    return p;
  }
  std::filesystem::path dir_;
};

TEST_F(LoadConfigTest, ReadsAFile_CFG2) {
  const auto p = Write("config.json", V41HuggingFace().dump(2));
  const EngramConfig c = LoadConfig(p);
  EXPECT_EQ(c.profile, Profile::kV41);
  EXPECT_EQ(c.source, p.string());
  EXPECT_EQ(LoadConfig(Write("demo.json", "{}"), Profile::kDemoV1).profile, Profile::kDemoV1);
}

TEST_F(LoadConfigTest, RefusalNamesThePath_CFG4) {
  json doc = V41Inference();
  doc["engram_n_heads"] = 0;
  const auto p = Write("bad.json", doc.dump());
  try {
    LoadConfig(p);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(p.string()));
    EXPECT_THAT(e.what(), HasSubstr("engram_n_heads"));
  }
}

TEST_F(LoadConfigTest, MalformedJsonAndMissingFile_CFG4) {
  const auto p = Write("broken.json", "{\"engram_layer_ids\": [1, 14],");
  try {
    LoadConfig(p);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(p.string()));
  }
  const auto missing = dir_ / "absent.json";
  try {
    LoadConfig(missing);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(missing.string()));
  }
}

}  // namespace
}  // namespace engram
