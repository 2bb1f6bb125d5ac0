/* A C program that tags its requests through liveheap's C API, found at run time: it has no
 * link-time dependency on liveheap, and runs bare as well as preloaded.
 *
 *   route_tagging_program THREADS REQUESTS
 *     Thread t (0-based) handles REQUESTS requests of route "GET /thread/<t>", each keeping
 *     (t + 1) * 1000 bytes; the main thread keeps 777 bytes outside any request, then opens a
 *     request with a name of 300 bytes and one with a byte that is not UTF-8, and calls
 *     begin(NULL) and end() without a request. Prints "READY", waits for a line, exits. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*Begin)(const char*);
typedef void (*End)(void);
static Begin begin_request;
static End end_request;
static int requests;

static void* handle(void* arg) {
  const long t = (long)arg;
  char route[32];
  snprintf(route, sizeof route, "GET /thread/%ld", t);
  for (int i = 0; i < requests; ++i) {
    if (begin_request) begin_request(route);
    char* kept = malloc((size_t)(t + 1) * 1000); /* left behind by the request */
    if (kept) memset(kept, 1, (size_t)(t + 1) * 1000);
    free(malloc(4096)); /* and freed within it */
    if (end_request) end_request();
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const long threads = strtol(argv[1], NULL, 10);
  requests = atoi(argv[2]);
  begin_request = (Begin)dlsym(RTLD_DEFAULT, "liveheap_request_begin");
  end_request = (End)dlsym(RTLD_DEFAULT, "liveheap_request_end");
  pthread_t ids[64];
  if (threads < 1 || threads > 64) return 2;
  for (long t = 0; t < threads; ++t) pthread_create(&ids[t], NULL, handle, (void*)t);
  for (long t = 0; t < threads; ++t) pthread_join(ids[t], NULL);
  char* outside = malloc(777);
  if (outside) memset(outside, 2, 777);
  if (begin_request && end_request) {
    char name[301];
    memset(name, 'a', 300);
    name[300] = '\0';
    begin_request(name);
    char* a = malloc(100);
    end_request();
    begin_request("GET /caf\xe9");
    char* b = malloc(200);
    end_request();
    end_request();
    begin_request(NULL);
    if (a) a[0] = 1;
    if (b) b[0] = 1;
  }
  printf("READY\n");
  fflush(stdout);
  char line[16];
  if (!fgets(line, sizeof line, stdin)) return 0;
  return 0;
}
