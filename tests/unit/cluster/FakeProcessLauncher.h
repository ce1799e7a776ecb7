#pragma once
// The fake at the exec plugin's process boundary: start() records the spec and returns at once;
// the test ends each process when it likes (finish), in any order, so the token source's policy
// (caching, refresh ahead of expiry, waiting, deadlines) is tested on a FakeClock without a
// single real process.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster/ProcessLauncher.h"

namespace leasehold::cluster {

class FakeProcessLauncher : public ProcessLauncher {
 public:
  struct Started {
    ProcessSpec spec;
    Exited exited;           // empty once finished or abandoned
    bool killed = false;     // kill() was called
    bool abandoned = false;  // the handle was destroyed before the exit
  };

  std::unique_ptr<RunningProcess> start(ProcessSpec spec, Exited exited) override {
    started_.push_back(std::make_shared<Started>(Started{std::move(spec), std::move(exited)}));
    return std::make_unique<Handle>(started_.back(), static_cast<int>(started_.size()));
  }

  std::size_t startedCount() const { return started_.size(); }
  const Started& started(std::size_t i) const { return *started_.at(i); }
  // The one still running (exactly one), or a test failure.
  std::size_t running() const {
    std::optional<std::size_t> found;
    for (std::size_t i = 0; i < started_.size(); ++i) {
      if (started_[i]->exited) {
        EXPECT_FALSE(found) << "more than one plugin process is running";
        found = i;
      }
    }
    EXPECT_TRUE(found) << "no plugin process is running";
    return found.value_or(0);
  }
  std::size_t runningCount() const {
    std::size_t n = 0;
    for (const auto& s : started_)
      n += s->exited ? 1 : 0;
    return n;
  }

  // Ends the running process as `exit` says.
  void finish(ProcessExit exit) { finish(running(), std::move(exit)); }
  void finish(std::size_t i, ProcessExit exit) {
    auto exited = std::move(started_.at(i)->exited);
    started_.at(i)->exited = nullptr;
    ASSERT_TRUE(exited) << "process " << i << " is not running";
    exited(std::move(exit));
  }
  // Exit status 0 with this stdout.
  void print(const std::string& output) {
    ProcessExit exit;
    exit.exitCode = 0;
    exit.output = output;
    finish(std::move(exit));
  }

 private:
  class Handle : public RunningProcess {
   public:
    Handle(std::shared_ptr<Started> started, int pid) : started_(std::move(started)), pid_(pid) {}
    ~Handle() override {
      if (started_->exited) {
        started_->abandoned = true;
        started_->killed = true;
        started_->exited = nullptr;
      }
    }
    void kill() override { started_->killed = true; }
    int pid() const override { return pid_; }

   private:
    std::shared_ptr<Started> started_;
    int pid_;
  };

  std::vector<std::shared_ptr<Started>> started_;
};

}  // namespace leasehold::cluster
