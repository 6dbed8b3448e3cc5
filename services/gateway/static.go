package gateway

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strings"

	"google.golang.org/grpc/codes"

	"github.com/wick-agent/wick/gen/openapi"
	"github.com/wick-agent/wick/services/gateway/internal/httperr"
)

func serveOpenAPI() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openapi.Document)
	})
}

// Cache policies of the UI's files.
const (
	// immutableCache is for assets/: Vite puts a hash of the content in
	// every name there, so a name never changes meaning.
	immutableCache = "public, max-age=31536000, immutable"
	// revalidateCache is for index.html (and every app route answered with
	// it): it names the current assets, so a browser must ask each time or
	// it keeps loading a release that is gone.
	revalidateCache = "no-cache"
)

// uiContentTypes fixes the types of what a Vite build emits, so that they do
// not depend on the host's mime.types: the gateway sends nosniff, and a
// browser then refuses a script or a style sheet with the wrong type.
var uiContentTypes = map[string]string{
	".html":        "text/html; charset=utf-8",
	".js":          "text/javascript; charset=utf-8",
	".mjs":         "text/javascript; charset=utf-8",
	".css":         "text/css; charset=utf-8",
	".json":        "application/json",
	".webmanifest": "application/manifest+json",
	".map":         "application/json",
	".svg":         "image/svg+xml",
	".png":         "image/png",
	".jpg":         "image/jpeg",
	".jpeg":        "image/jpeg",
	".gif":         "image/gif",
	".webp":        "image/webp",
	".avif":        "image/avif",
	".ico":         "image/x-icon",
	".woff":        "font/woff",
	".woff2":       "font/woff2",
	".ttf":         "font/ttf",
	".otf":         "font/otf",
	".wasm":        "application/wasm",
	".txt":         "text/plain; charset=utf-8",
}

// ErrNoUI is why a UI directory cannot be served.
var ErrNoUI = errors.New("no UI build")

// CheckUIDir reports whether dir holds a UI build the gateway can serve (an
// index.html); the error says how to get one.
func CheckUIDir(dir string) error {
	if dir == "" {
		return fmt.Errorf("%w: no UI directory given (-ui-dir); build one with `make ui` and pass -ui-dir ui/dist", ErrNoUI)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("%w: UI directory %s: %v", ErrNoUI, dir, err)
	}
	defer root.Close()
	if _, err := root.Stat("index.html"); err != nil {
		return fmt.Errorf("%w: UI directory %s has no index.html; build it with `make ui`", ErrNoUI, dir)
	}
	return nil
}

// noUIPage is the answer to GET / when no UI is served: a person who opens
// the suite in a browser learns how to get one instead of reading JSON.
const noUIPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark"><title>Wick: no UI</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 3rem auto; padding: 0 1rem; line-height: 1.5">
<h1>Wick is running, without its UI</h1>
<p>This gateway serves no web UI. Build it (Node.js 20.19 or later and npm) and start Wick with it:</p>
<pre>make ui
go run ./cmd/wick -ui-dir ui/dist</pre>
<p><code>make run</code> does both when Node.js and npm are installed.</p>
<p>The REST API answers here: see <a href="/openapi.json">/openapi.json</a>.</p>
</body></html>
`

// uiHandler serves the UI's built files; a path that is no file gets
// index.html, so the single-page app's own routes load on refresh. Without a
// UI directory (or an index.html in it) GET / is a page saying how to build
// the UI and every other such path a JSON 404.
func (g *Gateway) uiHandler() http.Handler {
	notFound := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httperr.Write(w, http.StatusNotFound, codes.NotFound, "no route for "+r.URL.Path)
	})
	noUI := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
			notFound(w, r)
			return
		}
		w.Header().Set("Content-Type", uiContentTypes[".html"])
		w.Header().Set("Cache-Control", revalidateCache)
		// 404: there is no UI here; the page only says how to get one.
		w.WriteHeader(http.StatusNotFound)
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte(noUIPage))
		}
	})
	if err := CheckUIDir(g.cfg.UIDir); err != nil {
		if g.cfg.UIDir != "" {
			g.log.Warn("serving no UI", "error", err)
		}
		return noUI
	}
	root, err := os.OpenRoot(g.cfg.UIDir)
	if err != nil {
		g.log.Warn("UI directory unusable; serving no UI", "dir", g.cfg.UIDir, "error", err)
		return noUI
	}
	fsys := root.FS()
	files := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			notFound(w, r)
			return
		}
		name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
		if name == "" {
			name = "index.html"
		}
		st, err := fs.Stat(fsys, name)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && st.IsDir()) {
			// Assets that are missing stay 404s; app routes get the app.
			if path.Ext(name) != "" && name != "index.html" {
				notFound(w, r)
				return
			}
			name = "index.html"
		}
		if ct, ok := uiContentTypes[path.Ext(name)]; ok {
			w.Header().Set("Content-Type", ct)
		}
		switch {
		case name == "index.html":
			w.Header().Set("Cache-Control", revalidateCache)
			// ServeFileFS, not the file server: that one redirects
			// /index.html to / and lists no directory, but / itself must
			// answer with the file.
			http.ServeFileFS(w, r, fsys, name)
			return
		case strings.HasPrefix(name, "assets/"):
			w.Header().Set("Cache-Control", immutableCache)
		}
		files.ServeHTTP(w, r)
	})
}
