// muster: one binary, many subcommands. All logic lives in src/cli.
#include "cli/app.h"

int main(int argc, char** argv) { return muster::cli::RunMuster(argc, argv); }
