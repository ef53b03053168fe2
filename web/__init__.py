"""The HTTP surface: one ASGI app composing the other packages' routers, auth, pages
and the ``annie`` command line."""
