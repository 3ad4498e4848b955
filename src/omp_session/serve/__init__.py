"""``omp-session serve``: a local web app over every session (docs/serve.md).

Between ``ops`` and ``cli`` in the layers: it reads through ``catalog`` and the ``ops`` jobs
(the HTML viewer, search, stats, the follower) and never writes a session. Starlette and uvicorn
come with the ``serve`` extra and are imported only by :mod:`omp_session.serve.app` and below.
"""
