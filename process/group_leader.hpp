#pragma once
// A Boost.Process extension for every process the backend spawns (the app, an exec
// health check): it runs in the child between fork and exec.

#include <signal.h>
#include <unistd.h>

#include <boost/process/extend.hpp>

namespace gaia::process {

// The child leads a new process group, so one kill(-pgid) reaches everything it
// started; and it gets the empty signal mask a fresh process expects (the supervisor
// blocks the signals it reads through a signalfd, and a blocked mask survives exec).
struct GroupLeader : boost::process::extend::handler {
  template <class Executor>
  void on_exec_setup(Executor&) const {
    ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
  }
};

}  // namespace gaia::process
