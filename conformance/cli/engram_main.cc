// The `engram` command line: JSON on stdout, errors on stderr, non-zero exit
// on failure. Every subcommand (cmd_*.cc) is a thin shell over the reference;
// Main() (app.cc) parses the command line and runs one.
#include "conformance/cli/common.h"

int main(int argc, char** argv) { return engram::cli::Main(argc, argv); }
