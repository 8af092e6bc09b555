// Static checks of what nvcc made of the engram::cuda kernels, run without a
// GPU. The build compiles cuda/engram_cuda.cu and cuda/fusion_cuda.cu to PTX
// for compute_90 (target engram_cuda_ptx); these tests read that PTX, where
// the properties below are visible instruction by instruction, and run
// ptxas on it for sm_90. They turn claims of cuda/README.md into checks:
//
//  * KernelCode.HotKernelsDivideNo64BitIntegers: the gather, mix, hash,
//    state, lookup and float-gather kernels contain no div/rem on 64-bit
//    integers (no 64-bit hardware division in the inner loop: a GPU
//    has none, nvcc expands each into a ~70-instruction routine) and call no
//    functions;
//  * KernelCode.LookupLoads8AndStores16Bytes: the lookup's one global store
//    is a 16-byte vector store and its codes come in one 8-byte load
//    (nvcc once split the uint4 store into four 4-byte stores);
//  * KernelCode.HashKernelStoresOneInt64: one 8-byte store per thread;
//  * KernelCode.FusionKernelsAreNotContracted: no float32 FMA in any fusion
//    kernel, so every product and sum rounds separately, as in the reference's
//    float32 mirror (a plain a * b + c in device code would contract);
//  * KernelCode.Sm90NoSpillsNoLocalMemory: ptxas for sm_90 reports no
//    register spills and no local memory for any kernel.
//
// A failure names the kernel and the offending PTX line.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/program_paths.h"

namespace {

// One .entry of a PTX file: its mangled name and its instruction lines.
struct Entry {
  std::string name;
  std::string file;
  std::vector<std::string> lines;
};

// The PTX files, one path per line of the list CMake writes at generation time.
std::vector<std::string> PtxFiles() {
  std::vector<std::string> files;
  std::ifstream list(ENGRAM_CUDA_PTX_LIST);
  if (!list) throw std::runtime_error(std::string("cannot read ") + ENGRAM_CUDA_PTX_LIST + " (re-run cmake)");
  for (std::string f; std::getline(list, f);) {
    if (!f.empty()) files.push_back(f);
  }
  return files;
}

// `s` as one POSIX shell word: in single quotes, each ' written as '\''.
std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Splits each PTX file into its entries: an entry runs from its ".entry"
// line to the next ".entry" or ".func" line (or the end of the file).
const std::vector<Entry>& Entries() {
  static const std::vector<Entry> entries = [] {
    std::vector<Entry> out;
    for (const std::string& file : PtxFiles()) {
      std::ifstream in(file);
      if (!in) throw std::runtime_error("cannot read PTX file " + file + " (build target engram_cuda_ptx)");
      Entry* current = nullptr;
      for (std::string line; std::getline(in, line);) {
        const size_t entry = line.find(".entry ");
        if (entry != std::string::npos) {
          const size_t begin = entry + 7;
          out.push_back(Entry{line.substr(begin, line.find('(', begin) - begin), file, {}});
          current = &out.back();
        } else if (line.find(".func ") != std::string::npos) {
          current = nullptr;
        } else if (current != nullptr) {
          current->lines.push_back(line);
        }
      }
    }
    return out;
  }();
  return entries;
}

// The entry whose mangled name contains `fragment` (e.g. "12LookupKernel",
// "17FloatGatherThread"); the test fails unless there is exactly one.
const Entry* Kernel(std::string_view fragment) {
  const Entry* found = nullptr;
  int count = 0;
  for (const Entry& e : Entries()) {
    if (e.name.find(fragment) != std::string::npos) {
      found = &e;
      ++count;
    }
  }
  EXPECT_EQ(count, 1) << "kernels whose name contains " << fragment;
  return count == 1 ? found : nullptr;
}

// The opcode of a PTX instruction line ("st.global.v4.u32" of
// "\tst.global.v4.u32 \t[%rd1], {...};"), skipping a predicate guard;
// empty for labels, directives, braces and comments.
std::string Opcode(const std::string& line) {
  std::istringstream in(line);
  std::string op;
  in >> op;
  if (!op.empty() && op[0] == '@') in >> op;
  if (op.empty() || op[0] == '.' || op[0] == '/' || op[0] == '{' || op[0] == '}' || op.back() == ':') return "";
  if (op.back() == ';') op.pop_back();
  return op;
}

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }
bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The instruction lines of `e` whose opcode satisfies `pred`.
template <class Pred>
std::vector<std::string> Matching(const Entry& e, Pred pred) {
  std::vector<std::string> out;
  for (const std::string& line : e.lines) {
    const std::string op = Opcode(line);
    if (!op.empty() && pred(op)) out.push_back(line);
  }
  return out;
}

std::string Show(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += "\n    " + l;
  return s;
}

bool Is64BitDivision(const std::string& op) {
  return (StartsWith(op, "div.") || StartsWith(op, "rem.")) &&
         (EndsWith(op, ".s64") || EndsWith(op, ".u64") || EndsWith(op, ".b64"));
}

bool IsGlobalStore(const std::string& op) { return StartsWith(op, "st.global"); }
bool IsGlobalLoad(const std::string& op) { return StartsWith(op, "ld.global"); }

constexpr std::array<std::string_view, 9> kHotKernels = {
    "12GatherKernel",      "9MixKernel",            "10HashKernel",
    "17UpdateStateKernel", "19RollbackCheckKernel", "19RollbackApplyKernel",
    "10ForkKernel",        "12LookupKernel",        "17FloatGatherThread"};
constexpr std::array<std::string_view, 11> kFusionKernels = {
    "16FusionGateKernel", "18FusionUpdateKernel", "18GateFunctionThread", "13WkvBf16Thread",
    "14ActQuantThread",   "12WkvFp8Thread",       "14DemoProjThread",     "14DemoGateThread",
    "15DemoValueThread",  "14ConvNormThread",     "10ConvThread"};

TEST(KernelCode, EveryKernelIsThere) {
  ASSERT_FALSE(PtxFiles().empty());
  for (std::string_view k : kHotKernels) EXPECT_NE(Kernel(k), nullptr) << k;
  for (std::string_view k : kFusionKernels) EXPECT_NE(Kernel(k), nullptr) << k;
  EXPECT_EQ(Entries().size(), kHotKernels.size() + kFusionKernels.size()) << "a new kernel: add it to a list here";
}

TEST(KernelCode, HotKernelsDivideNo64BitIntegers) {
  for (std::string_view k : kHotKernels) {
    const Entry* e = Kernel(k);
    if (e == nullptr) continue;
    EXPECT_GT(e->lines.size(), 5u) << k;
    const std::vector<std::string> divisions = Matching(*e, Is64BitDivision);
    EXPECT_TRUE(divisions.empty()) << k << " divides 64-bit integers (use Quotient / ModP):" << Show(divisions);
    const std::vector<std::string> calls = Matching(*e, [](const std::string& op) { return StartsWith(op, "call"); });
    EXPECT_TRUE(calls.empty()) << k << " calls a function:" << Show(calls);
  }
  // The hash kernel's residues are the §HASH.7 umulhi, which must be there.
  if (const Entry* hash = Kernel("10HashKernel")) {
    EXPECT_FALSE(Matching(*hash, [](const std::string& op) { return op == "mul.hi.u64"; }).empty());
  }
}

TEST(KernelCode, LookupLoads8AndStores16Bytes) {
  const Entry* e = Kernel("12LookupKernel");
  ASSERT_NE(e, nullptr);
  const std::vector<std::string> stores = Matching(*e, IsGlobalStore);
  ASSERT_EQ(stores.size(), 1u) << "the lookup writes its 8 bf16 with one store:" << Show(stores);
  const std::string op = Opcode(stores[0]);
  EXPECT_TRUE(op == "st.global.v4.u32" || op == "st.global.v4.b32" || op == "st.global.v2.u64" ||
              op == "st.global.v2.b64")
      << "not a 16-byte store:" << Show(stores);
  const std::vector<std::string> code_loads = Matching(*e, [](const std::string& o) {
    return o == "ld.global.v2.u32" || o == "ld.global.v2.b32" || o == "ld.global.u64" || o == "ld.global.b64";
  });
  // One 8-byte load of the codes; the id is an 8-byte load too.
  EXPECT_GE(code_loads.size(), 2u) << Show(Matching(*e, IsGlobalLoad));
}

TEST(KernelCode, HashKernelStoresOneInt64) {
  const Entry* e = Kernel("10HashKernel");
  ASSERT_NE(e, nullptr);
  const std::vector<std::string> stores = Matching(*e, IsGlobalStore);
  ASSERT_EQ(stores.size(), 1u) << Show(stores);
  const std::string op = Opcode(stores[0]);
  EXPECT_TRUE(op == "st.global.u64" || op == "st.global.b64" || op == "st.global.s64") << Show(stores);
}

TEST(KernelCode, FusionKernelsAreNotContracted) {
  for (std::string_view k : kFusionKernels) {
    const Entry* e = Kernel(k);
    if (e == nullptr) continue;
    const std::vector<std::string> fmas =
        Matching(*e, [](const std::string& op) { return StartsWith(op, "fma.") && EndsWith(op, ".f32"); });
    EXPECT_TRUE(fmas.empty()) << k << " has float32 FMAs (use FMul/FAdd, the _rn intrinsics):" << Show(fmas);
  }
  // The separate roundings are there: FMul's __fmul_rn is mul.rn.f32.
  if (const Entry* gate = Kernel("16FusionGateKernel")) {
    EXPECT_FALSE(Matching(*gate, [](const std::string& op) { return op == "mul.rn.f32"; }).empty());
  }
}

// ptxas -v for sm_90 over each PTX file, with spills and local memory as
// errors; the report (registers per kernel) is printed.
TEST(KernelCode, Sm90NoSpillsNoLocalMemory) {
  for (const std::string& file : PtxFiles()) {
    const std::string command = ShellQuote(ENGRAM_PTXAS) + " -arch=sm_90 -O3 -v --warn-on-spills " +
                                "--warn-on-local-memory-usage --warning-as-error " + ShellQuote(file) +
                                " -o /dev/null 2>&1";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
    ASSERT_NE(pipe, nullptr) << command;
    std::string report;
    std::array<char, 4096> buffer;
    for (size_t n; (n = std::fread(buffer.data(), 1, buffer.size(), pipe.get())) > 0;) report.append(buffer.data(), n);
    const int status = pclose(pipe.release());
    EXPECT_EQ(status, 0) << command << "\n" << report;
    EXPECT_NE(report.find("Used "), std::string::npos) << report;
    EXPECT_EQ(report.find("warning"), std::string::npos) << report;
    std::istringstream lines(report);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("Compiling entry") != std::string::npos || line.find("Used ") != std::string::npos) {
        std::cout << line << "\n";
      }
      if (line.find("spill stores") != std::string::npos) {
        EXPECT_NE(line.find(" 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"), std::string::npos)
            << file << ": " << line;
      }
    }
  }
}

}  // namespace
