"""Tags each request of a WSGI app (Flask, Django, ...) with its route for liveheap: what a
request allocates records it, and GET /debug/memory/routes says what each route's requests
left behind. Runs under LD_PRELOAD=libliveheap_preload.so (or with libliveheap.so loaded);
without liveheap in the process it does nothing.

    from liveheap_wsgi import LiveheapRoutes
    app.wsgi_app = LiveheapRoutes(app.wsgi_app, app.url_map)  # Flask: "GET /users/<int:id>"
"""
import ctypes

try:
    _lib = ctypes.CDLL(None)  # the process's own symbols: the preloaded library's among them
    _begin, _end = _lib.liveheap_request_begin, _lib.liveheap_request_end
    _begin.argtypes, _begin.restype, _end.argtypes, _end.restype = [ctypes.c_char_p], None, [], None
except (OSError, AttributeError):
    _begin = _end = None


class LiveheapRoutes:
    def __init__(self, app, url_map=None):
        self.app, self.url_map = app, url_map  # url_map: name a route by its rule, not its path

    def route(self, environ):
        path = environ.get("PATH_INFO") or "/"
        if self.url_map is not None:
            try:
                path = self.url_map.bind_to_environ(environ).match(return_rule=True)[0].rule
            except Exception:  # no rule matches (a 404, a 405): the path itself
                pass
        return "%s %s" % (environ.get("REQUEST_METHOD", "GET"), path)

    def __call__(self, environ, start_response):
        if _begin is None:
            return self.app(environ, start_response)
        _begin(self.route(environ).encode("utf-8", "replace"))
        try:
            return self.app(environ, start_response)  # a streamed body is made outside the request
        finally:
            _end()
