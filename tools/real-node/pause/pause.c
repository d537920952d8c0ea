/*
 * The process of a Pod sandbox (kruntimes' own, for the real node in tools/real-node):
 * it holds the Pod's namespaces open and does nothing else. As PID 1 of a Pod that shares
 * its PID namespace it also reaps orphaned children. SIGINT and SIGTERM end it at once.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PAUSE_VERSION
#define PAUSE_VERSION "unknown"
#endif

static void stop(int sig) {
  (void)sig;
  _exit(0);
}

static void reap(int sig) {
  (void)sig;
  int saved = errno; /* a handler must not change errno under the interrupted code */
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
  errno = saved;
}

static void say(const char *s) {
  if (write(STDOUT_FILENO, s, strlen(s)) < 0) {
    /* nothing to do: the version is only informative */
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "-v") == 0) {
    say("kruntimes pause " PAUSE_VERSION "\n");
    return 0;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);
  sa.sa_handler = stop;
  if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0) return 1;
  sa.sa_handler = reap;
  sa.sa_flags = SA_NOCLDSTOP | SA_RESTART;
  if (sigaction(SIGCHLD, &sa, NULL) != 0) return 1;
  for (;;) pause();
}
