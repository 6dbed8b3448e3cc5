package tools

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wick-agent/wick/platform/netguard"
)

func netguardNone() *netguard.Guard { return netguard.New() }

// articlePage is a page as news sites serve them: navigation, ads and a
// script around one article.
const articlePage = `<!DOCTYPE html>
<html><head><title>Owls at night | The Daily Example</title>
<script>var tracker = "SCRIPT_TEXT_MUST_NOT_APPEAR"; document.write(tracker);</script>
<style>.ad { color: red } /* STYLE_TEXT */</style>
</head><body>
<nav class="site-nav"><ul><li><a href="/">NAV_HOME_LINK</a></li><li><a href="/sports">NAV_SPORTS_LINK</a></li><li><a href="/weather">NAV_WEATHER_LINK</a></li></ul></nav>
<div class="ad advertisement sponsored" id="ad-banner"><a href="https://ads.example/click">AD_BUY_NOW Cheap watches, click here</a></div>
<main><article>
<h1>Owls at night</h1>
<p>Owls hunt at night with hearing so precise that they can catch prey under snow. Their facial discs gather sound like a dish antenna, and their ears sit at different heights on the skull, which lets them place a sound in both direction and elevation.</p>
<p>Their feathers have soft fringes that break up turbulence, so their flight is nearly silent. A vole hears nothing until the owl has already struck. Researchers have studied these fringes to make quieter fans and wind turbines.</p>
<p>Most owls swallow small prey whole and later cough up pellets of fur and bone. Scientists collect pellets under roosts to learn what the birds ate, and which small mammals live in the area, without trapping a single one. See <a href="/owls/pellets">the pellet guide</a>.</p>
</article></main>
<aside class="sidebar"><h3>Related</h3><ul><li><a href="/x">SIDEBAR_RELATED_LINK</a></li></ul></aside>
<footer class="footer">FOOTER_COPYRIGHT 2026 The Daily Example</footer>
<script>console.log("SCRIPT_AT_END")</script>
</body></html>`

// fetchServer serves the test pages on loopback; its address is the only
// one the guard lets the fetch tool reach without checking.
func fetchServer(t *testing.T, mux *http.ServeMux) (*httptest.Server, *fetchTool) {
	t.Helper()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, NewFetchURL(WithFetchGuard(netguard.New(), srv.Listener.Addr().String())).(*fetchTool)
}

// TestFetchURL fetches each kind of page: an article's text comes back as
// Markdown without its navigation, ads and scripts; text, Markdown and
// JSON as they are (JSON indented); other types are refused by name.
func TestFetchURL(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	serve := func(path, ctype, body string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if ctype != "" {
				w.Header().Set("Content-Type", ctype)
			}
			_, _ = w.Write([]byte(body))
		})
	}
	serve("/article", "text/html; charset=utf-8", articlePage)
	serve("/notes.txt", "text/plain; charset=utf-8", "line one\n  line two\n")
	serve("/readme.md", "text/markdown", "# Title\n\n- item\n")
	serve("/data", "application/json", `{"a":1,"b":[true,null]}`)
	serve("/pic.png", "image/png", "\x89PNG\r\n\x1a\n")
	serve("/gone", "text/plain", "")
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/notes.txt", http.StatusFound) })
	srv, tool := fetchServer(t, mux)

	cases := []struct {
		name, path   string
		want, absent []string
		wantErr      string
	}{
		{name: "article", path: "/article",
			want: []string{"# Owls at night", "URL: " + srv.URL + "/article", "Owls hunt at night with hearing so precise",
				"nearly silent", "pellets of fur and bone", "(" + srv.URL + "/owls/pellets)"},
			absent: []string{"SCRIPT_TEXT_MUST_NOT_APPEAR", "SCRIPT_AT_END", "STYLE_TEXT", "NAV_HOME_LINK", "NAV_SPORTS_LINK", "AD_BUY_NOW", "SIDEBAR_RELATED_LINK", "FOOTER_COPYRIGHT"}},
		{name: "plain text", path: "/notes.txt", want: []string{"URL: " + srv.URL + "/notes.txt\n\nline one\n  line two\n"}},
		{name: "markdown", path: "/readme.md", want: []string{"\n# Title\n\n- item\n"}},
		{name: "json", path: "/data", want: []string{"{\n  \"a\": 1,\n  \"b\": [\n    true,\n    null\n  ]\n}"}},
		{name: "redirect", path: "/moved", want: []string{"URL: " + srv.URL + "/notes.txt", "line one"}},
		{name: "image", path: "/pic.png", wantErr: "content type image/png is not fetched"},
		{name: "not found", path: "/missing", wantErr: "answered HTTP 404"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := tool.Execute(userCtx("alice"), map[string]any{"url": srv.URL + tc.path})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("fetch = %q, %v; want error %q", out, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("result does not hold %q:\n%s", w, out)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(out, a) {
					t.Errorf("result holds %q:\n%s", a, out)
				}
			}
		})
	}
}

// TestFetchURLRefused: destinations the guard refuses (another loopback
// port, private and metadata addresses, directly or by redirect), schemes
// other than http and https, and endless redirects.
func TestFetchURLRefused(t *testing.T) {
	t.Parallel()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the guard let a fetch reach %s", r.URL)
	}))
	t.Cleanup(other.Close)
	mux := http.NewServeMux()
	redirect := func(path, to string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, to, http.StatusFound) })
	}
	redirect("/to-loopback", other.URL+"/")
	redirect("/to-private", "http://10.1.2.3/admin")
	redirect("/to-metadata", "http://169.254.169.254/latest/meta-data/")
	redirect("/to-file", "file:///etc/passwd")
	mux.HandleFunc("/loop/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Path+"x", http.StatusFound)
	})
	srv, tool := fetchServer(t, mux)
	for _, tc := range []struct{ name, url, want string }{
		{"other loopback port", other.URL + "/", "destination " + other.Listener.Addr().String() + " is not allowed"},
		{"localhost", "http://localhost:" + strings.Split(other.Listener.Addr().String(), ":")[1] + "/", "is not allowed"},
		{"metadata", "http://169.254.169.254/latest/meta-data/", "destination 169.254.169.254:80 is not allowed"},
		{"private", "http://10.0.0.1:8080/", "destination 10.0.0.1:8080 is not allowed"},
		{"redirect to loopback", srv.URL + "/to-loopback", "is not allowed"},
		{"redirect to private", srv.URL + "/to-private", "destination 10.1.2.3:80 is not allowed"},
		{"redirect to metadata", srv.URL + "/to-metadata", "destination 169.254.169.254:80 is not allowed"},
		{"redirect to file", srv.URL + "/to-file", "only http and https"},
		{"endless redirects", srv.URL + "/loop/", fmt.Sprintf("stopped after %d redirects", MaxFetchRedirects)},
		{"file scheme", "file:///etc/passwd", "only http and https"},
		{"no url", "", `argument "url"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := tool.Execute(userCtx("alice"), map[string]any{"url": tc.url})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("fetch %s = %q, %v; want error %q", tc.url, out, err, tc.want)
			}
		})
	}
}

// TestFetchURLCap: a 50 MB page, streamed, is cut at the cap and the
// result says so.
func TestFetchURLCap(t *testing.T) {
	t.Parallel()
	const pageBytes = 50 << 20
	mux := http.NewServeMux()
	mux.HandleFunc("/big.txt", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", fmt.Sprint(pageBytes))
		chunk := []byte(strings.Repeat("abcdefghijklmno\n", 4096)) // 64 KiB
		for sent := 0; sent < pageBytes; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return // the client stopped reading at its cap
			}
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name string
		max  int64
	}{{"default cap", 0}, {"cap under the result's", 256 << 10}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tool := NewFetchURL(WithFetchMaxBytes(tc.max), WithFetchGuard(netguard.New(), srv.Listener.Addr().String()))
			out, err := tool.Execute(userCtx("alice"), map[string]any{"url": srv.URL + "/big.txt"})
			if err != nil {
				t.Fatal(err)
			}
			max := tc.max
			if max == 0 {
				max = DefaultFetchMaxBytes
			}
			if !strings.Contains(out, fmt.Sprintf("Note: the page is larger than %d bytes; only its first %d bytes were read.", max, max)) {
				t.Errorf("result does not say it was cut: %.300s", out)
			}
			// The page read is the cap; the result keeps its head and tail
			// when that is over MaxFetchResultChars.
			body := out[strings.Index(out, "\n\n")+2:]
			switch {
			case max <= MaxFetchResultChars && int64(len(body)) != max:
				t.Errorf("body is %d bytes, want the cap %d", len(body), max)
			case max > MaxFetchResultChars && !strings.Contains(out, fmt.Sprintf("(truncated %d characters)", max+int64(len(out)-len(body))-MaxFetchResultChars)):
				t.Errorf("result of %d characters is not cut to its head and tail: %.200s", len(out), out[MaxFetchResultChars/2:])
			}
		})
	}
}

// BenchmarkFetchURL fetches and converts a 1 MB article page on loopback.
func BenchmarkFetchURL(b *testing.B) {
	var page strings.Builder
	page.WriteString("<!DOCTYPE html><html><head><title>Long read</title></head><body><nav><a href='/'>Home</a></nav><article><h1>Long read</h1>")
	for i := 0; page.Len() < 1<<20; i++ {
		fmt.Fprintf(&page, "<h2>Section %d</h2><p>Paragraph %d tells of owls, voles and the silent flight of the hunters at night, with <a href=\"/n/%d\">a link</a> and <em>some emphasis</em> in it.</p>", i, i, i)
	}
	page.WriteString("</article><footer>Footer</footer></body></html>")
	body := page.String()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(body))
	}))
	b.Cleanup(srv.Close)
	tool := NewFetchURL(WithFetchGuard(netguard.New(), srv.Listener.Addr().String()))
	ctx := userCtx("alice")
	args := map[string]any{"url": srv.URL + "/long"}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		out, err := tool.Execute(ctx, args)
		if err != nil || !strings.Contains(out, "Paragraph 1 tells of owls") {
			b.Fatalf("fetch = %.200q, %v", out, err)
		}
	}
}
