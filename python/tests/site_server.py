"""A site of interlinked pages on loopback that counts how often each
path is fetched. The index links to every page, so which pages a crawl
reaches does not depend on which ones a filter let through."""

import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Site:
    def __init__(self, pages):
        self.pages = pages
        self.fetches = Counter()
        self.lock = threading.Lock()
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                body = site.render(self.path)
                with site.lock:
                    site.fetches[self.path] += 1
                if body is None:
                    self.send_error(404)
                    return
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def page(self, i):
        return f"/p/{i}"

    def all_pages(self):
        return [self.page(i) for i in range(self.pages)]

    def links(self, i):
        n = self.pages
        # Repeated links, links back, a fragment variant: a crawl meets most
        # pages many times.
        targets = [(i + 1) % n, (i * 7 + 3) % n, (i * 7 + 3) % n, (i * 13 + 5) % n, 0]
        hrefs = [self.page(t) for t in targets]
        hrefs.append(self.page((i + 1) % n) + "#again")
        hrefs.append("/index")
        return hrefs

    def render(self, path):
        if path == "/index":
            hrefs = self.all_pages()
        elif path.startswith("/p/") and path[3:].isdigit() and int(path[3:]) < self.pages:
            hrefs = self.links(int(path[3:]))
        else:
            return None
        items = "".join(f'<a href="{h}">{h}</a>\n' for h in hrefs)
        return f"<html><body>{items}</body></html>"

    def counts(self):
        with self.lock:
            return Counter(self.fetches)

    def reset(self):
        with self.lock:
            self.fetches.clear()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
