package gateway

import (
	"errors"
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

// uiHandler serves the UI's built files; a path that is no file gets
// index.html, so the single-page app's own routes load on refresh. Without a
// UI directory (or an index.html in it) every such path is a JSON 404.
func (g *Gateway) uiHandler() http.Handler {
	notFound := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httperr.Write(w, http.StatusNotFound, codes.NotFound, "no route for "+r.URL.Path)
	})
	if g.cfg.UIDir == "" {
		return notFound
	}
	root, err := os.OpenRoot(g.cfg.UIDir)
	if err != nil {
		g.log.Warn("UI directory unusable; serving no UI", "dir", g.cfg.UIDir, "error", err)
		return notFound
	}
	fsys := root.FS()
	if _, err := fs.Stat(fsys, "index.html"); err != nil {
		g.log.Warn("UI directory has no index.html; serving no UI", "dir", g.cfg.UIDir)
		return notFound
	}
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
			http.ServeFileFS(w, r, fsys, "index.html")
			return
		}
		if strings.HasPrefix(name, "assets/") {
			// Vite fingerprints asset names, so they never change.
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		}
		files.ServeHTTP(w, r)
	})
}
