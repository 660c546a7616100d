// libonnx's checker and shape inference on a model, and the frames of tonnx-check's socket
// (check_work.h).
#include "check/check_work.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <cerrno>
#include <csignal>
#include <exception>

namespace tonnx::check_work {

namespace {
void strip_tensor(onnx::TensorProto& t) {
  t.clear_raw_data();
  t.clear_float_data();
  t.clear_int32_data();
  t.clear_int64_data();
  t.clear_double_data();
  t.clear_uint64_data();
  t.clear_string_data();
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGABRT:
      return "SIGABRT";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGKILL:
      return "SIGKILL";
    default:
      return "a signal";
  }
}

// The bytes of `n` from fd (a socket), waiting up to `deadline`.
ReadStatus read_exactly(int fd, std::optional<std::chrono::steady_clock::time_point> deadline,
                        char* out, size_t n) {
  size_t got = 0;
  while (got < n) {
    int wait_ms = -1;
    if (deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      *deadline - std::chrono::steady_clock::now())
                      .count();
      if (left <= 0) return ReadStatus::kTimedOut;
      wait_ms = static_cast<int>(std::min<int64_t>(left, 1000));
    }
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, wait_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ReadStatus::kClosed;
    if (r == 0) continue;
    ssize_t k = ::recv(fd, out + got, n - got, 0);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k <= 0) return ReadStatus::kClosed;
    got += static_cast<size_t>(k);
  }
  return ReadStatus::kOk;
}
}  // namespace

void strip_data(onnx::GraphProto& g) {
  for (auto& t : *g.mutable_initializer()) strip_tensor(t);
  g.clear_sparse_initializer();
  for (auto& n : *g.mutable_node())
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_t()) strip_tensor(*a.mutable_t());
      for (auto& t : *a.mutable_tensors()) strip_tensor(t);
      if (a.has_g()) strip_data(*a.mutable_g());
      for (auto& sub : *a.mutable_graphs()) strip_data(sub);
    }
}

namespace {
std::string run_or_throw(char kind, onnx::ModelProto& m) {
  if (kind != kCheckAndInfer && kind != kCheckOnly && kind != kInferOnly)
    return std::string("Eunknown check request '") + kind + "'";
  if (kind == kCheckAndInfer || kind == kCheckOnly) {
    try {
      onnx::checker::check_model(m);
    } catch (const std::exception& e) {
      return std::string("EONNX checker: ") + e.what();
    }
  }
  if (kind == kCheckAndInfer || kind == kInferOnly) {
    try {
      onnx::ShapeInferenceOptions opts(/*check_type=*/true, /*strict_mode=*/1,
                                       /*data_prop=*/false);
      onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(), opts);
    } catch (const std::exception& e) {
      return std::string("EONNX shape inference: ") + e.what();
    }
  }
  strip_data(*m.mutable_graph());
  return "M" + m.SerializeAsString();
}
}  // namespace

std::string run(char kind, onnx::ModelProto& m) {
  try {
    return run_or_throw(kind, m);
  } catch (const std::exception& e) {  // out of memory, say, in the answer
    return std::string("E") + e.what();
  }
}

void load_schemas() { (void)onnx::OpSchemaRegistry::Schema("Relu", 14, ""); }

std::string crash_message(const std::string& what, int status) {
  return what + " crashed on this model (" +
         (WIFSIGNALED(status) ? signal_name(WTERMSIG(status)) : "abnormal exit") +
         "): the model is malformed in a way libonnx does not check, such as a node whose "
         "inputs have fewer dimensions than its operator needs";
}

bool send_frame(int fd, char kind, const std::string& payload,
                std::optional<std::chrono::steady_clock::time_point> deadline) {
  char head[9];
  head[0] = kind;
  uint64_t n = payload.size();
  for (int i = 0; i < 8; ++i) head[1 + i] = static_cast<char>((n >> (8 * i)) & 0xff);
  auto send_all = [fd, &deadline](const char* p, size_t len) {
    while (len > 0) {
      if (deadline) {  // a peer that stops reading must not hold the sender for ever
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        *deadline - std::chrono::steady_clock::now())
                        .count();
        if (left <= 0) return false;
        pollfd q{fd, POLLOUT, 0};
        int r = ::poll(&q, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
        if (r < 0 && errno != EINTR) return false;
        if (r <= 0) continue;
      }
      ssize_t w = ::send(fd, p, len, MSG_NOSIGNAL | (deadline ? MSG_DONTWAIT : 0));
      if (w < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (w <= 0) return false;
      p += w;
      len -= static_cast<size_t>(w);
    }
    return true;
  };
  return send_all(head, sizeof head) && send_all(payload.data(), payload.size());
}

ReadStatus read_frame(int fd, std::optional<std::chrono::steady_clock::time_point> deadline,
                      uint64_t max_bytes, char& kind, std::string& payload) {
  char head[9];
  ReadStatus s = read_exactly(fd, deadline, head, sizeof head);
  if (s != ReadStatus::kOk) return s;
  kind = head[0];
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= static_cast<uint64_t>(static_cast<unsigned char>(head[1 + i])) << (8 * i);
  if (n > max_bytes) return ReadStatus::kTooLong;
  payload.assign(static_cast<size_t>(n), '\0');
  return read_exactly(fd, deadline, payload.data(), payload.size());
}

}  // namespace tonnx::check_work
