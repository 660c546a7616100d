// tonnx's checker process (tonnx-check, src/check/checker_process.h): libonnx's checker and
// shape inference run there, and give the same answers as in a forked child (the fallback,
// TONNX_CHECK_HELPER=off); a crash or a kill there costs the caller nothing but that check;
// a missing, failing or foreign helper means the fork; a forked copy of the caller starts
// its own.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "check/checker_process.h"
#include "test_config.h"
#include "test_util.h"
#include "tonnx/check.h"
#include "tonnx/proto.h"

namespace {

using tonnx::test::expect_error;
namespace fs = std::filesystem;

// The pids of this process's tonnx-check children.
std::set<pid_t> checker_children() {
  std::set<pid_t> out;
  for (const auto& task : fs::directory_iterator("/proc/self/task")) {
    std::ifstream children(task.path() / "children");
    pid_t pid = 0;
    while (children >> pid) {
      std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
      std::string name;
      std::getline(comm, name);
      if (name == "tonnx-check") out.insert(pid);
    }
  }
  return out;
}

// Sets TONNX_CHECK_HELPER for a scope.
struct HelperEnv {
  explicit HelperEnv(const char* value) {
    if (const char* old = std::getenv("TONNX_CHECK_HELPER")) saved = old;
    ::setenv("TONNX_CHECK_HELPER", value, 1);
  }
  ~HelperEnv() {
    if (saved)
      ::setenv("TONNX_CHECK_HELPER", saved->c_str(), 1);
    else
      ::unsetenv("TONNX_CHECK_HELPER");
  }
  std::optional<std::string> saved;
};

onnx::ModelProto valid_model() { return tonnx::test::relu_neg_model(); }

// What a check gives: the error's message, or the model with its inferred types.
std::string outcome(void (*check)(onnx::ModelProto&), onnx::ModelProto m) {
  try {
    check(m);
  } catch (const tonnx::CheckError& e) {
    return std::string("error: ") + e.what();
  }
  return "model: " + m.SerializeAsString();
}
void check_and_infer(onnx::ModelProto& m) { tonnx::check_model(m, true); }
void check_only(onnx::ModelProto& m) { tonnx::check_model(m, false); }
void infer_only(onnx::ModelProto& m) { tonnx::infer_shapes_strict(m); }

onnx::ModelProto unknown_op() {
  onnx::ModelProto m = valid_model();
  m.mutable_graph()->mutable_node(0)->set_op_type("NoSuchOp");
  return m;
}

std::vector<onnx::ModelProto> sample_models() {
  std::vector<onnx::ModelProto> ms{valid_model()};
  ms.push_back(unknown_op());
  onnx::ModelProto bad_type = valid_model();  // a Relu of strings
  bad_type.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::STRING);
  ms.push_back(bad_type);
  ms.push_back(tonnx::read_model_proto(tonnx::test::source_dir() +
                                       "/tests/data/libonnx_convtranspose_crash.onnx"));
  return ms;
}

TEST(CheckerProcess, IsFoundBesideTheLibrary) {
  ASSERT_EQ(tonnx::detail::checker_process_path(),
            fs::weakly_canonical(std::string(TONNX_TEST_BINARY_DIR) + "/tonnx-check").string());
  HelperEnv off("off");
  EXPECT_EQ(tonnx::detail::checker_process_path(), "");
}

// Every kind of request, on valid, invalid and crashing models: the same answers both ways,
// and the checks did run in a tonnx-check child.
TEST(CheckerProcess, AnswersAsAForkedChildDoes) {
  int compared = 0;
  std::vector<onnx::ModelProto> models = sample_models();
  for (auto check : {check_and_infer, check_only, infer_only})
    for (size_t i = 0; i < models.size(); ++i) {
      const onnx::ModelProto& m = models[i];
      std::string helper = outcome(check, m);
      // (The last model crashes libonnx's inference: that process is gone.)
      if (i + 1 < models.size() || check == check_only) {
        EXPECT_EQ(checker_children().size(), 1u);
        // The process answered (it did not decline, leaving the work to the fork).
        if (i + 1 < models.size()) {
          EXPECT_TRUE(tonnx::detail::ask_checker_process('C', m, "a check").has_value());
        }
      }
      std::string forked;
      {
        HelperEnv off("off");
        forked = outcome(check, m);
      }
      if (i + 1 < models.size() || check == check_only) {
        EXPECT_EQ(helper, forked);
      } else {
        // (tonnx::test::expect_libonnx_failure: a SIGSEGV or std::bad_alloc, as it falls.)
        for (const std::string& o : {helper, forked})
          EXPECT_TRUE(o.rfind("error: ", 0) == 0 && tonnx::test::is_libonnx_failure(o.substr(7)))
              << o;
      }
      ++compared;
    }
  EXPECT_EQ(compared, 12);
  // The valid model came back with y's type; the others with their errors.
  onnx::ModelProto m = valid_model();
  tonnx::check_model(m);
  ASSERT_EQ(m.graph().value_info_size(), 1);
  EXPECT_EQ(m.graph().value_info(0).type().tensor_type().shape().dim(1).dim_value(), 3);
  onnx::ModelProto u = unknown_op();
  expect_error([&] { tonnx::check_model(u); }, "No Op registered for NoSuchOp");
}

// A crash is that check's error; the next check gets a new process. So does one after the
// process was killed from outside.
TEST(CheckerProcess, SurvivesCrashesAndKills) {
  // A check that gets y's type back from a process of its own: that process's pid.
  auto checked_by = [] {
    onnx::ModelProto ok = valid_model();
    tonnx::check_model(ok);
    EXPECT_EQ(ok.graph().value_info_size(), 1);
    std::set<pid_t> children = checker_children();
    EXPECT_EQ(children.size(), 1u);
    return children.empty() ? pid_t{0} : *children.begin();
  };
  pid_t first = checked_by();
  onnx::ModelProto crash = tonnx::read_model_proto(tonnx::test::source_dir() +
                                                   "/tests/data/libonnx_convtranspose_crash.onnx");
  std::string error;
  try {
    tonnx::infer_shapes_strict(crash);
  } catch (const tonnx::CheckError& e) {
    error = e.what();
  }
  // (Nearly always a SIGSEGV; the same undefined behaviour may end in std::bad_alloc, which
  // the process answers and lives on: see tonnx::test::expect_libonnx_failure.)
  bool crashed = error.find("ONNX shape inference crashed on this model (SIG") == 0;
  ASSERT_TRUE(tonnx::test::is_libonnx_failure(error)) << error;
  if (crashed) {
    EXPECT_TRUE(checker_children().empty());  // reaped
  }
  pid_t second = checked_by();
  if (crashed) {
    EXPECT_NE(second, first);
  } else {
    EXPECT_EQ(second, first);
  }
  ASSERT_GT(second, 0);
  ASSERT_EQ(::kill(second, SIGKILL), 0);
  // Straight on, while it may still be dying with the next model sent: that check retries on
  // a new process instead of blaming the model.
  EXPECT_NE(checked_by(), second);
}

// A forked copy of this process must not talk to its parent's checker process: it starts
// its own and checks as well as its parent.
TEST(CheckerProcess, AForkedCopyStartsItsOwn) {
  onnx::ModelProto m = valid_model();
  tonnx::check_model(m);
  ASSERT_EQ(checker_children().size(), 1u);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int code = 0;
    try {
      for (int i = 0; i < 3; ++i) {
        onnx::ModelProto c = valid_model();
        tonnx::check_model(c);
        if (c.graph().value_info_size() != 1) code = 2;
      }
      if (checker_children().size() != 1) code = 3;
    } catch (...) {
      code = 4;
    }
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  m = valid_model();
  tonnx::check_model(m);  // the parent's still answers
  EXPECT_EQ(m.graph().value_info_size(), 1);
}

// In a fresh process: no helper where TONNX_CHECK_HELPER names none, one that exits at once,
// one that greets in another protocol, one that neither greets nor reads (10 s, then it is
// killed): the CLI's export forks and succeeds all the same.
TEST(CheckerProcess, MissingOrForeignHelpersMeanTheFork) {
  std::string dir = tonnx::test::temp_dir("foreign_helper");
  std::string foreign = dir + "/foreign.sh";
  {
    std::ofstream f(foreign);
    // A frame of kind 'H' with another greeting, then silence until the socket closes.
    f << "#!/bin/sh\ntouch " << dir << "/foreign.ran\n"
      << "printf 'H\\005\\000\\000\\000\\000\\000\\000\\000hello' >&0\ncat >/dev/null\n";
  }
  // One that neither greets nor reads: the export waits 10 s for a greeting, then forks.
  std::string silent = dir + "/silent.sh";
  {
    std::ofstream f(silent);
    f << "#!/bin/sh\ntouch " << dir << "/silent.ran\nexec sleep 60\n";
  }
  for (const std::string& p : {foreign, silent}) fs::permissions(p, fs::perms::owner_all);
  for (const std::string& helper : {dir + "/none", std::string("/bin/true"), foreign, silent}) {
    tonnx::test::RunResult r =
        tonnx::test::run_command("TONNX_CHECK_HELPER=" + helper + " " + TONNX_TEST_CLI +
                                 " export dcgan_discriminator -o " + dir + "/d.onnx 2>&1");
    EXPECT_EQ(r.exit_code, 0) << helper << ":\n" << r.output;
    EXPECT_NE(r.output.find("exported"), std::string::npos) << r.output;
  }
  EXPECT_TRUE(fs::exists(dir + "/foreign.ran")) << "TONNX_CHECK_HELPER was not used";
  EXPECT_TRUE(fs::exists(dir + "/silent.ran")) << "TONNX_CHECK_HELPER was not used";
}

}  // namespace
