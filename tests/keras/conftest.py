"""Fixtures shared by the Keras tests: a 127.0.0.1 HTTP server and an isolated Keras cache."""

import functools
import http.server
import threading

import pytest


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def http_folder(tmp_path):
    """`(folder, base_url, hits)`: files put in `folder` are served at `base_url/<name>`;
    `hits` lists the paths requested."""
    folder = tmp_path / "served"
    folder.mkdir()
    hits = []

    class Handler(_Quiet):
        def do_GET(self):
            hits.append(self.path)
            super().do_GET()

    handler = functools.partial(Handler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield folder, f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def keras_home(tmp_path, monkeypatch):
    """A fresh `$KERAS_HOME` (and `$HOME`), so nothing reads or writes the real caches."""
    home = tmp_path / "keras_home"
    monkeypatch.setenv("KERAS_HOME", str(home))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return home
