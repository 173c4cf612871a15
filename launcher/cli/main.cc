// accel-launch: a thin main over the launcher library (STYLE.md rule 13).
#include "launcher/cli/cli.h"

int main(int argc, char** argv) { return accel::launcher::Main(argc, argv); }
