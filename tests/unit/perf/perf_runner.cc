#include "perf_runner.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace hcltest {
namespace {

struct TempFile {
  std::string path;
  int fd = -1;
  TempFile() {
    const char* dir = std::getenv("TMPDIR");
    path = std::string(dir && *dir ? dir : "/tmp") + "/hcl-perf-test-XXXXXX";
    fd = mkstemp(path.data());
  }
  ~TempFile() {
    if (fd >= 0) close(fd);
    unlink(path.c_str());
  }
  std::string contents() const {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
};

pid_t spawn(const std::vector<std::string>& argv, const EnvVars& env, int outFd, int errFd) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid != 0) return pid;
  setpgid(0, 0);  // so a timeout can kill mpirun and everything it started
  for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
  dup2(outFd, STDOUT_FILENO);
  dup2(errFd, STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  std::fprintf(stderr, "execv %s failed\n", args[0]);
  _exit(127);
}

PerfRun runAll(const std::vector<std::vector<std::string>>& commands, const std::vector<EnvVars>& envs,
               int timeoutSec) {
  const size_t n = commands.size();
  std::vector<TempFile> outs(n), errs(n);
  std::vector<pid_t> pids(n);
  for (size_t i = 0; i < n; ++i) pids[i] = spawn(commands[i], envs[i], outs[i].fd, errs[i].fd);
  PerfRun run;
  run.procs.resize(n);
  std::vector<bool> done(n, false);
  size_t remaining = n;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutSec);
  while (remaining > 0) {
    for (size_t i = 0; i < n; ++i) {
      int status = 0;
      if (done[i] || waitpid(pids[i], &status, WNOHANG) != pids[i]) continue;
      done[i] = true;
      --remaining;
      run.procs[i].exited = WIFEXITED(status);
      run.procs[i].code = WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status);
    }
    if (remaining > 0 && std::chrono::steady_clock::now() > deadline) {
      for (size_t i = 0; i < n; ++i) {
        if (done[i]) continue;
        kill(-pids[i], SIGKILL);
        waitpid(pids[i], nullptr, 0);
        run.procs[i].exited = false;
        run.procs[i].code = SIGKILL;
        run.procs[i].err += "[killed after " + std::to_string(timeoutSec) + " s]\n";
      }
      break;
    }
    if (remaining > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (size_t i = 0; i < n; ++i) {
    run.procs[i].out = outs[i].contents();
    run.procs[i].err = errs[i].contents() + run.procs[i].err;
  }
  return run;
}

std::vector<std::string> command(const std::string& binary, const std::vector<std::string>& args) {
  std::vector<std::string> argv{binary};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

}  // namespace

bool PerfRun::allSucceeded() const {
  for (const ProcessOutput& p : procs) {
    if (!p.exited || p.code != 0) return false;
  }
  return !procs.empty();
}

std::string PerfRun::describe() const {
  std::string text;
  for (size_t i = 0; i < procs.size(); ++i) {
    text += "process " + std::to_string(i) + (procs[i].exited ? " exited " : " killed by signal ") +
            std::to_string(procs[i].code) + "; stderr:\n" + procs[i].err + "\n";
  }
  return text;
}

std::string perfBinary(const std::string& name) { return std::string(HCL_PERF_BIN_DIR) + "/" + name; }

int freeTcpPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

PerfRun runSingle(const std::string& binary, const std::vector<std::string>& args, const EnvVars& env, int timeoutSec) {
  return runAll({command(binary, args)}, {env}, timeoutSec);
}

PerfRun runWithLauncherEnv(const std::string& binary, const std::vector<std::string>& args, int nprocs,
                           const EnvVars& env, int timeoutSec) {
  return runWithLauncherEnv(binary, std::vector<std::vector<std::string>>(static_cast<size_t>(nprocs), args), env,
                            timeoutSec);
}

PerfRun runWithLauncherEnv(const std::string& binary, const std::vector<std::vector<std::string>>& argsPerProcess,
                           const EnvVars& env, int timeoutSec) {
  const int nprocs = static_cast<int>(argsPerProcess.size());
  const std::string commId = "127.0.0.1:" + std::to_string(freeTcpPort());
  std::vector<std::vector<std::string>> commands;
  std::vector<EnvVars> envs;
  for (int r = 0; r < nprocs; ++r) {
    commands.push_back(command(binary, argsPerProcess[static_cast<size_t>(r)]));
    EnvVars e = env;
    e.insert(e.end(), {{"RANK", std::to_string(r)},
                       {"WORLD_SIZE", std::to_string(nprocs)},
                       {"LOCAL_RANK", std::to_string(r)},
                       {"HCL_COMM_ID", commId}});
    envs.push_back(std::move(e));
  }
  return runAll(commands, envs, timeoutSec);
}

PerfRun runMpi(const std::string& mpirun, const std::string& binary, const std::vector<std::string>& args, int nprocs,
               const EnvVars& env, int timeoutSec) {
  std::vector<std::string> argv{mpirun, "--oversubscribe", "--allow-run-as-root", "-np", std::to_string(nprocs)};
  // Keep Open MPI to loopback TCP and self: it only broadcasts the unique id.
  argv.insert(argv.end(),
              {"--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo"});
  for (const auto& [k, v] : env) argv.insert(argv.end(), {"-x", k + "=" + v});
  argv.push_back(binary);
  argv.insert(argv.end(), args.begin(), args.end());
  return runAll({argv}, {EnvVars{}}, timeoutSec);
}

}  // namespace hcltest
