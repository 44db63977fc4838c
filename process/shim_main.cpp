// gaia-shim: the supervisor of one process-backend copy (process/shim.hpp).
#include "process/shim.hpp"

int main(int argc, char** argv) { return gaia::process::shim_main(argc, argv); }
