// §CON hash contracts: what they pin, their digest, and the comparison that
// names every differing field.
#include "base/sha256.h"
#include "reference/contract.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

#include "base/error.h"
#include "reference/config.h"
#include "base/program_paths.h"

namespace engram {
namespace {

using nlohmann::ordered_json;
using testing::HasSubstr;

// A 129280-token map with 99092 distinct ids (the V4.1 sizes), pad 2 -> 2.
TokenMap V41SizedMap() {
  std::vector<int64_t> map(129280);
  std::iota(map.begin(), map.begin() + 99092, 0);
  for (size_t i = 99092; i < map.size(); ++i) map[i] = static_cast<int64_t>(i % 99092);
  return ParseTokenMap(nlohmann::json(map), "map");
}

TEST(Contract, PinsThePublishedV41Layout_CON1) {
  const ordered_json c = BuildContract(V41FlashConfig(), V41SizedMap(), std::nullopt);
  EXPECT_EQ(c["format"], "engram-hash-contract");
  EXPECT_EQ(c["profile"], "v4.1");
  EXPECT_EQ(c["compressedVocabSize"], 99092);
  EXPECT_EQ(c["tokenMap"]["tokens"], 129280);
  // Published figures (DeepSeek-V4.1-Flash config.json and code).
  EXPECT_EQ(c["layers"][0]["numEmbeddings"], 384006168);
  EXPECT_EQ(c["layers"][1]["numEmbeddings"], 384016682);
  EXPECT_EQ(c["layers"][0]["multipliers"][0], 76632096046245LL);
  EXPECT_EQ(c["layers"][1]["multipliers"][3], 82619226485591LL);
  EXPECT_TRUE(c["tokenizer"]["sha256"].is_null());
  EXPECT_EQ(c["contractDigest"], ContractDigest(c));
  EXPECT_NO_THROW(CheckContractForm(c, "c.json"));
}

// §CON.1 specVersion is the version the specification and the vectors carry
// (§VEC.2): the contract takes it from the one constant, so it is the
// `specVersion` of the committed vector files, not a literal of its own.
TEST(Contract, SpecVersionIsTheVectorsVersion_CON1) {
  const ordered_json c = BuildContract(V41FlashConfig(), V41SizedMap(), std::nullopt);
  const nlohmann::json vectors =
      ReadJsonFile(std::string(ENGRAM_SOURCE_DIR) + "/vectors/v1/layout.json", engram::InputKind::kVectorFile);
  EXPECT_EQ(c["specVersion"].get<std::string>(), vectors.at("specVersion").get<std::string>());
}

TEST(Contract, SameSizeDifferentMapIsCaught_CON1) {
  // The known failure: a map from another tokenizer revision, same size.
  TokenMap swapped = V41SizedMap();
  std::swap(swapped.map[10], swapped.map[11]);
  const ordered_json a = BuildContract(V41FlashConfig(), V41SizedMap(), std::nullopt);
  const ordered_json b = BuildContract(V41FlashConfig(), swapped, std::nullopt);
  const std::vector<std::string> diffs = CompareContracts(a, b);
  ASSERT_EQ(diffs.size(), 2u);  // the map digest, and hence the contract digest
  EXPECT_THAT(diffs[0], HasSubstr("tokenMap.sha256"));
  EXPECT_THAT(diffs[1], HasSubstr("contractDigest"));
}

TEST(Contract, ComparisonNamesNestedFields_CON3) {
  ordered_json a = BuildContract(V41FlashConfig(), V41SizedMap(), std::nullopt);
  ordered_json b = a;
  b["layers"][1]["primes"][0][3] = 16000001;
  b["pad"]["compressed"] = 3;
  b.erase("heads");
  const std::vector<std::string> diffs = CompareContracts(a, b);
  ASSERT_EQ(diffs.size(), 3u);
  EXPECT_THAT(diffs[0], HasSubstr("heads: expected 8, missing"));
  EXPECT_THAT(diffs[1], HasSubstr("pad.compressed: expected 2, got 3"));
  EXPECT_THAT(diffs[2], HasSubstr("layers[1].primes[0][3]: expected"));
}

TEST(Contract, EditedContractFailsItsDigest_CON2) {
  ordered_json c = BuildContract(DemoV1Config(), ParseTokenMap(nlohmann::json({0, 1, 2, 1, 3}), "m"), std::nullopt);
  c["seed"] = 1;
  try {
    CheckContractForm(c, "edited.json");
    FAIL() << "an edited contract passed";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("edited.json: key 'contractDigest'"));
  }
}

TEST(Contract, RefusesOtherFormatsAndVersions_CON3) {
  ordered_json c = BuildContract(DemoV1Config(), ParseTokenMap(nlohmann::json({0, 1, 2}), "m"), std::nullopt);
  ordered_json v2 = c;
  v2["version"] = 2;
  EXPECT_THROW(CheckContractForm(v2, "c.json"), Error);
  ordered_json other = c;
  other["format"] = "something";
  EXPECT_THROW(CheckContractForm(other, "c.json"), Error);
  EXPECT_THROW(CheckContractForm(ordered_json::array(), "c.json"), Error);
}

TEST(Contract, ConfigFromContractRebuildsTheSameContract_CON3) {
  for (const EngramConfig& cfg : {V41FlashConfig(), DemoV1Config()}) {
    const TokenMap map = V41SizedMap();
    const ordered_json c = BuildContract(cfg, map, std::nullopt);
    EXPECT_TRUE(CompareContracts(c, BuildContract(ConfigFromContract(c, "c.json"), map, std::nullopt)).empty())
        << ProfileName(cfg.profile);
  }
}

TEST(Contract, DigestIsOverCompactJsonWithoutTheDigestKey_CON2) {
  // Recomputed by hand from the spec's rule, independently of ContractDigest.
  ordered_json c = BuildContract(DemoV1Config(), ParseTokenMap(nlohmann::json({0, 1, 2}), "m"), std::nullopt);
  ordered_json without = c;
  without.erase("contractDigest");
  EXPECT_EQ(c["contractDigest"], Sha256Hex(without.dump()));
}

}  // namespace
}  // namespace engram
