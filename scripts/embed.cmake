# Turns a text file into a C++ source defining `gaia::render::k_gaia_libsonnet`.
file(READ ${IN} CONTENT HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," BYTES "${CONTENT}")
file(WRITE ${OUT} "// Generated from gaia.libsonnet by scripts/embed.cmake. Do not edit.\n#include <string_view>\nnamespace gaia::render {\nstatic const char k_bytes[] = {${BYTES} 0};\nextern const std::string_view k_gaia_libsonnet{k_bytes, sizeof(k_bytes) - 1};\n}\n")
