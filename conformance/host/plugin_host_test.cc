// The C-ABI plug-in host (conformance/host/plugin_host.h, spec/conformance.md
// §CONF.3) as `engram conform --lib` drives it: what a misbehaving library
// must not do to the run (leave files behind, corrupt the protocol).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "testutil/conform.h"

namespace {

namespace fs = std::filesystem;
using namespace engram::conform::test;
using testing::HasSubstr;
using testing::Not;

// §CONF.3: a plug-in that crashes (abort) or hangs (the runner SIGKILLs the
// host at the timeout) inside engram_table_open_safetensors / _packed leaves
// no temporary file in $TMPDIR.
TEST(PluginHost, ACrashOrHangInTableOpenLeavesNoTemporaryFile) {
  for (int variant : {1, 2}) {
    const fs::path tmp = Dir() / ("tmp_" + std::to_string(variant));
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    const std::string lib = std::string(ENGRAM_TEST_PLUGIN_DIR) + "/libengram_table_trap_plugin_" + std::to_string(variant) + ".so";
    const fs::path out = Dir() / "trap.txt";
    const std::string cmd = "TMPDIR=" + tmp.string() + " " + ENGRAM_CLI + " conform --vectors " + kVectors +
                            " --suite table_lookup --timeout 1 --lib " + lib + " >" + out.string() + " 2>&1";
    const int status = std::system(cmd.c_str());
    const std::string text = Slurp(out);
    EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 1) << text;
    EXPECT_THAT(text, HasSubstr(variant == 1 ? "(crashed)" : "(timeout)")) << text;
    std::vector<std::string> left;
    for (const auto& e : fs::recursive_directory_iterator(tmp)) left.push_back(e.path().string());
    EXPECT_TRUE(left.empty()) << "variant " << variant << " left " << testing::PrintToString(left);
  }
}

// §CONF.3: a library that prints to stdout does not corrupt the protocol.
TEST(PluginHost, TheLibrarysStdoutGoesToStderr) {
  const std::string lib = std::string(ENGRAM_TEST_PLUGIN_DIR) + "/libengram_noisy_plugin.so";
  const Split r = ConformSplit("--vectors " + kVectors + " --suite layout --lib " + lib);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("conformance: OK: " + TestsIn("layout") + " passed, 0 failed, 0 skipped"));
  EXPECT_THAT(r.out, Not(HasSubstr("hello from plugin")));
}

}  // namespace
