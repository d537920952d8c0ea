// check-node.sh's probe of a Pod with user namespaces (`hostUsers: false`): a static binary
// in an image FROM scratch (no shell, no coreutils).
//
//   userns-check serve           print the ids and the maps once, then sleep until SIGTERM
//   userns-check report PATH...  print the ids and the maps, then for each PATH: a directory
//                                gets a new file written (its owner and mode as seen here), a
//                                file is read (its owner, and whether it could be read)
//
// Output lines (parsed by check-node.sh):
//   ids uid=U euid=U gid=G egid=G
//   uid_map <inside> <outside> <count>   (one per line of /proc/self/uid_map)
//   gid_map <inside> <outside> <count>
//   dir PATH wrote uid=U gid=G | dir PATH error=ERRNO-NAME
//   file PATH uid=U gid=G read=ok | file PATH error=ERRNO-NAME
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void print_map(const char *name) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/self/%s", name);
  FILE *f = fopen(path, "r");
  if (!f) { printf("%s error=%s\n", name, strerrorname_np(errno)); return; }
  while (fgets(line, sizeof line, f)) {
    unsigned long in, out, count;
    if (sscanf(line, "%lu %lu %lu", &in, &out, &count) == 3) printf("%s %lu %lu %lu\n", name, in, out, count);
  }
  fclose(f);
}

static void print_ids(void) {
  printf("ids uid=%u euid=%u gid=%u egid=%u\n", getuid(), geteuid(), getgid(), getegid());
  print_map("uid_map");
  print_map("gid_map");
}

static void report(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) { printf("path %s error=%s\n", path, strerrorname_np(errno)); return; }
  if (S_ISDIR(st.st_mode)) {
    char file[4096];
    snprintf(file, sizeof file, "%s/userns-check.%d", path, (int)getpid());
    int fd = open(file, O_CREAT | O_WRONLY | O_TRUNC, 0600);
    if (fd < 0 || write(fd, "x", 1) != 1 || fstat(fd, &st) != 0) {
      printf("dir %s error=%s\n", path, strerrorname_np(errno));
    } else {
      printf("dir %s wrote uid=%u gid=%u\n", path, st.st_uid, st.st_gid);
    }
    if (fd >= 0) close(fd);
    unlink(file);
    return;
  }
  char buf[64];
  int fd = open(path, O_RDONLY);
  if (fd < 0 || read(fd, buf, sizeof buf) < 0) {
    printf("file %s uid=%u gid=%u error=%s\n", path, st.st_uid, st.st_gid, strerrorname_np(errno));
  } else {
    printf("file %s uid=%u gid=%u read=ok\n", path, st.st_uid, st.st_gid);
  }
  if (fd >= 0) close(fd);
}

static volatile sig_atomic_t stop;
static void on_term(int sig) { (void)sig; stop = 1; }

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "serve") == 0) {
    print_ids();
    fflush(stdout);
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    while (!stop) pause();
    return 0;
  }
  if (argc >= 2 && strcmp(argv[1], "report") == 0) {
    print_ids();
    for (int i = 2; i < argc; i++) report(argv[i]);
    return 0;
  }
  fprintf(stderr, "usage: userns-check serve | report PATH...\n");
  return 2;
}
