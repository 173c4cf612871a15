// accel-launch: a thin main over the launcher library.
#include "launcher/cli/cli.h"

int main(int argc, char** argv) { return accel::launcher::Main(argc, argv); }
