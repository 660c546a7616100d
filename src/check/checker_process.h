// tonnx's checker process (tonnx-check, src/check_helper/main.cpp) seen from libtonnx: started
// once per process and kept, it runs libonnx's checker and shape inference on the models
// check.cpp sends it. Where it cannot take a model, check.cpp forks instead (check.h).
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>

namespace tonnx::detail {

// Starts the checker process unless one runs; it builds libonnx's schemas while the caller
// goes on. False where there is none to start: tonnx-check not found (beside libtonnx, in
// libexec/tonnx under its prefix, or at $TONNX_CHECK_HELPER), TONNX_CHECK_HELPER=off, or it
// failed to start or to greet within 10 s (then the process forks for every check). It runs in
// its own process group (a Ctrl-C is for the caller), ends when the caller's socket closes, and
// a fork()ed copy of the caller closes its copy of the socket (and starts its own if it checks).
// A caller that reaps every child (waitpid(-1)) takes its status from us: a crash of libonnx
// there then reads "abnormal exit".
bool start_checker_process();

// check_work::run(kind, m) in the checker process: its answer, or nullopt where it cannot take
// m (none to start, TONNX_CHECK_HELPER=off now, busy with another thread's model, m over
// 64 MiB, or m unparseable there); the caller then does the work in a forked child. Throws
// CheckError when m crashed the process twice (a new one is started for the second try, and
// for the next model) or took more than 600 s (it is killed).
std::optional<std::string> ask_checker_process(char kind, const onnx::ModelProto& m,
                                               const std::string& what);

// The checker process's path, or empty where there is none (see start_checker_process).
std::string checker_process_path();

}  // namespace tonnx::detail
