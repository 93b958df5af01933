# Embed a file as a C array: cmake -DIN=<file> -DOUT=<file.c> -DNAME=<symbol> -P embed.cmake
# defines `const unsigned char NAME[]` (NUL-terminated) and
# `const size_t NAME_size` (without the NUL).
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" hex_len)
math(EXPR size "${hex_len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}" "/* Generated from ${IN} by cmake/embed.cmake; do not edit. */\n#include <stddef.h>\nconst unsigned char ${NAME}[] = {\n${bytes}0x00};\nconst size_t ${NAME}_size = ${size};\n")
