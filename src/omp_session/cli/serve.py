"""``omp-session serve``: a local web app over every session (docs/serve.md).

Starlette and uvicorn are the ``serve`` extra: without them the command is one line naming the
extra (exit 1).
"""

from __future__ import annotations

import os
import sys
import threading
import webbrowser
from pathlib import Path

import click

from omp_session.errors import SessionError
from omp_session.extras import require
from omp_session.paths import sessions_dir

from ._errors import command
from ._store import active_store, store_option

__all__ = ["serve_command"]

_LOCAL = ("127.0.0.1", "localhost", "::1", "[::1]")


@command("serve")
@click.option("--root", type=click.Path(file_okay=False), help="Sessions root (default: omp's).")
@store_option
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; anything but 127.0.0.1/localhost/::1 needs --allow-remote.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port to listen on (0: a free one).")
@click.option("--open", "open_browser", is_flag=True, help="Open the printed URL in the browser.")
@click.option("--allow-remote", is_flag=True, help="Allow --host to be an address other machines can reach "
              "(the token still guards every request).")
def serve_command(root: str | None, host: str, port: int, open_browser: bool, allow_remote: bool) -> None:
    """Serve every session as a local web app: the sessions list, each session in the HTML viewer
    (updating live while omp writes it), full-text search and the cost reports.

    Read-only: no request changes a session (the search index and caches live under the cache
    dir). It listens on 127.0.0.1 only unless told otherwise, and every request needs the token
    of the printed URL (then a cookie). Ctrl-C stops it.

    \b
    Examples:
      omp-session serve --open
      omp-session serve --port 8765 --root ~/old-sessions
      omp-session serve --store postgresql://db.example/omp
    """
    if host.lower() not in _LOCAL and not allow_remote:
        raise click.UsageError(f"--host {host} is reachable from other machines: add --allow-remote to mean it")
    active = active_store(connect=True)  # an unreachable store: said before listening, not on each page
    if root is not None and active is not None:
        raise click.UsageError("give --root (a folder of files) or --store URL, not both")
    require("starlette")
    require("uvicorn")
    store = None
    if active is not None:  # opened for reading by --store (closed when the command ends)
        from omp_session.serve.store_source import StoreCatalog

        store = StoreCatalog(*active)
    base = (Path(root) if root else sessions_dir()).absolute()
    if store is None and not base.is_dir():
        raise SessionError(f"{base}: no such sessions directory")
    from omp_session.serve.app import bind, build_app, serve_forever, url_for
    from omp_session.serve.security import new_token

    try:
        sock = bind(host, port)
    except OSError as e:
        raise SessionError(f"cannot listen on {host}:{port}: {os.strerror(e.errno) if e.errno else e}") from None
    port = sock.getsockname()[1]
    token = new_token()
    stopping = threading.Event()
    app = build_app(base, token=token, host=host, port=port, remote=allow_remote, stopping=stopping, store=store)
    url = url_for(host, port, token)
    if allow_remote and host.lower() not in _LOCAL:
        click.echo(f"omp-session: warning: listening on {host}: anyone who can reach this machine and has the "
                   "token can read every session; the connection is not encrypted", err=True)
    click.echo(f"omp-session serve: {base if store is None else store.parsed.name + ' under ' + store.parsed.root}")
    click.echo(url)
    sys.stdout.flush()
    if open_browser:
        threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
    try:
        serve_forever(sock, app, stopping)
    except KeyboardInterrupt:
        pass  # Ctrl-C is how it is stopped: the server has shut down, nothing went wrong
    finally:
        sock.close()
        if store is not None:
            store.close()
