# Included by llama.cpp's CMake project (CMAKE_PROJECT_llama.cpp_INCLUDE, set by setup.sh):
# builds only the libraries llama-cpp-python loads (llama, ggml and its backends).
# llama-cpp-python forces LLAMA_BUILD_COMMON on (52 objects plus cpp-httplib), but only the
# multimodal tool it builds with LLAVA_BUILD (off here) uses it; a normal variable overrides
# the cached one. vendor-hash serves only that tool too.
set(LLAMA_BUILD_COMMON OFF)
cmake_language(DEFER CALL set_target_properties vendor-hash PROPERTIES EXCLUDE_FROM_ALL TRUE)
