// The work of libonnx's checker and shape inference, run away from the caller's process, and
// the frames that carry it. check.cpp runs it in tonnx's checker process (tonnx-check,
// src/check_helper/main.cpp, spoken to by checker_process.cpp) or, where that cannot take a
// model, in a forked child. Both compile this file; it needs libonnx and nothing of tonnx.
#pragma once

#include <onnx/onnx_pb.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace tonnx::check_work {

// What is asked of a model.
enum Kind : char {
  kCheckAndInfer = 'C',  // onnx::checker::check_model, then strict shape inference
  kCheckOnly = 'K',      // the checker alone
  kInferOnly = 'I',      // strict shape inference alone
};

// Runs `kind` on m. The answer: 'M' + m serialized without tensor data (so only the inferred
// types travel), or 'E' + the CheckError message (any std::exception's: run never throws one).
std::string run(char kind, onnx::ModelProto& m);

// Clears the data of every tensor (initializers and tensor attributes, subgraphs too).
void strip_data(onnx::GraphProto& g);

// Builds libonnx's schema registry: its first lookup builds every schema of every opset.
void load_schemas();

// The message for a process that did `what` and ended with wait status `status`.
std::string crash_message(const std::string& what, int status);

// The first frame tonnx-check sends, once its schemas are built: the protocol it speaks.
constexpr char kHelloKind = 'H';
constexpr const char* kHello = "tonnx-check protocol 2";
// An answer, from tonnx-check or a forked child: one frame whose payload is run()'s answer.
constexpr char kAnswerKind = 'A';
// tonnx-check's answer (empty) to a model it could not parse (deeper than protobuf's limit):
// the caller does the work in a forked child instead.
constexpr char kUnparsedKind = 'P';
// The most a frame may carry, either way: protobuf's own limit on a message.
constexpr uint64_t kMaxFrameBytes = uint64_t{1} << 31;

// A frame on a socket: its kind (1 byte), its payload's length (8 bytes, little-endian), the
// payload. send_frame is false when the peer is gone (no SIGPIPE) or, with a deadline, has
// not taken the frame by then.
bool send_frame(int fd, char kind, const std::string& payload,
                std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);
enum class ReadStatus { kOk, kClosed, kTimedOut, kTooLong };
// Reads one frame; no deadline: waits as long as it takes. A payload over max_bytes is
// kTooLong, and the stream is unusable after it.
ReadStatus read_frame(int fd, std::optional<std::chrono::steady_clock::time_point> deadline,
                      uint64_t max_bytes, char& kind, std::string& payload);

}  // namespace tonnx::check_work
