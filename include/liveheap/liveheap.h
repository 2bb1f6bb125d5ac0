/* liveheap's C API: tag the allocations of a request with its route, from any language.

   While a thread handles a request, call liveheap_request_begin with the route's name (the
   framework's route pattern, e.g. "GET /users/{id}", or the method and path without the
   query), and liveheap_request_end when the thread leaves it. Every block the thread
   allocates in between records that route, and keeps it whoever frees it; the reports can
   then be read by route (key=route, route=GLOB, GET /debug/memory/routes).

   Both functions are exported by libliveheap.so and by libliveheap_preload.so, so a
   program that is only preloaded finds them at run time (dlsym(RTLD_DEFAULT, ...), a weak
   declaration, or ctypes.CDLL(None) in Python); they cost a few dozen instructions and never
   allocate, lock, block or write anything out. With neither library loaded, look them up
   and skip the calls when they are absent.

   Thread-safety: any thread; the tag is the calling thread's own. */
#ifndef LIVEHEAP_LIVEHEAP_H
#define LIVEHEAP_LIVEHEAP_H

#ifdef __cplusplus
extern "C" {
#endif

/* A request of `route` begins on this thread: it is counted (the route's requests) and
   every allocation of this thread is tagged with it until liveheap_request_end, or until
   another liveheap_request_begin replaces the tag (begin/end do not nest).
   The name is copied, at most 127 bytes of it (cut at a character's start); bytes that
   are not UTF-8, and control characters, are kept as '?'; "" is "(unnamed)". A process
   keeps 255 distinct names; later new names are counted as "(other routes)".
   NULL does nothing. */
void liveheap_request_begin(const char* route);

/* This thread leaves its request: its allocations are untagged again ("(no request)").
   Without an open request it does nothing. */
void liveheap_request_end(void);

#ifdef __cplusplus
}
#endif

#endif /* LIVEHEAP_LIVEHEAP_H */
