package llmgw_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/wick-agent/wick/services/llmgw"
	"github.com/wick-agent/wick/services/llmgw/internal/fakellm"
)

// pngImage is a real 2×2 PNG.
func pngImage(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

const (
	seeingScript = `script:{"accepts_images":true,"turns":[{"text":"I see {{images}} images."}]}`
	blindScript  = `script:[{"text":"I see nothing."}]`
)

func userWithImages(text string, urls ...string) openai.ChatCompletionMessageParamUnion {
	parts := []openai.ChatCompletionContentPartUnionParam{openai.TextContentPart(text)}
	for _, u := range urls {
		parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: u}))
	}
	return openai.UserMessage(parts)
}

// TestImageParts: image_url parts reach a model that accepts images, from
// data: URLs and from http(s) URLs fetched through the network guard; every
// image the gateway cannot take, and every image for a text-only model, is a
// 400 that says why.
func TestImageParts(t *testing.T) {
	t.Parallel()
	img := pngImage(t)
	dataURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(img)
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/cat.png":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(img)
		case "/liar.png":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write([]byte("<html>not a picture</html>"))
		case "/page":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html></html>"))
		case "/huge.png":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(append(img, make([]byte, llmgw.MaxImageBytes)...))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(files.Close)
	open := config()
	open.ImageURLAllowNets = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	openClient := sdkClient(t, service(t, open, nil), "")
	guardedClient := sdkClient(t, service(t, config(), nil), "")

	tests := []struct {
		name   string
		client openai.Client
		model  string
		urls   []string
		reply  string // the answer, when it is not an error
		status int
		errMsg string
	}{
		{name: "a data URL", client: guardedClient, model: seeingScript, urls: []string{dataURL}, reply: "I see 1 images."},
		{name: "two images, one fetched", client: openClient, model: seeingScript, urls: []string{dataURL, files.URL + "/cat.png"}, reply: "I see 2 images."},
		{name: "no image", client: openClient, model: seeingScript, reply: "I see 0 images."},
		{name: "a text-only model", client: openClient, model: blindScript, urls: []string{dataURL}, status: 400, errMsg: "does not accept images"},
		{name: "a loopback URL through the guard", client: guardedClient, model: seeingScript, urls: []string{files.URL + "/cat.png"}, status: 400, errMsg: "is not a public address"},
		{name: "bytes that are not the declared type", client: openClient, model: seeingScript, urls: []string{files.URL + "/liar.png"}, status: 400, errMsg: "the data is not image/png"},
		{name: "not an image", client: openClient, model: seeingScript, urls: []string{files.URL + "/page"}, status: 400, errMsg: `type "text/html" is not supported`},
		{name: "an image too large", client: openClient, model: seeingScript, urls: []string{files.URL + "/huge.png"}, status: 400, errMsg: "is larger than"},
		{name: "a URL that answers 404", client: openClient, model: seeingScript, urls: []string{files.URL + "/gone.png"}, status: 400, errMsg: "404"},
		{name: "a data URL of another type", client: openClient, model: seeingScript, urls: []string{"data:image/bmp;base64," + base64.StdEncoding.EncodeToString(img)}, status: 400, errMsg: `type "image/bmp" is not supported`},
		{name: "a data URL that is not base64", client: openClient, model: seeingScript, urls: []string{"data:image/png,raw"}, status: 400, errMsg: "data:<image type>;base64,<data>"},
		{name: "another scheme", client: openClient, model: seeingScript, urls: []string{"file:///etc/passwd"}, status: 400, errMsg: "data: URL or an http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, err := tt.client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model: tt.model, Messages: []openai.ChatCompletionMessageParamUnion{userWithImages("what is this?", tt.urls...)},
			})
			if tt.status == 0 {
				if err != nil || resp.Choices[0].Message.Content != tt.reply {
					t.Fatalf("resp %+v err %v, want %q", resp, err, tt.reply)
				}
				return
			}
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tt.status || !strings.Contains(apiErr.Message, tt.errMsg) {
				t.Fatalf("err = %v, want %d containing %q", err, tt.status, tt.errMsg)
			}
		})
	}
}

// TestImagesReachUpstreams: an image becomes an OpenAI image_url part with
// a data URL, and an Anthropic base64 image block before the text.
func TestImagesReachUpstreams(t *testing.T) {
	t.Parallel()
	img := pngImage(t)
	b64 := base64.StdEncoding.EncodeToString(img)
	oa := fakellm.New(fakellm.SSE(fakellm.Fixture("openai/text_stream.sse")))
	an := fakellm.New(fakellm.SSE(fakellm.Fixture("anthropic/basic_response.txt")))
	client := sdkClient(t, service(t, config(openaiModel("gpt", fake(t, oa)), anthropicModel("claude", fake(t, an))), keys), "")
	tests := []struct {
		model string
		f     *fakellm.Server
		want  func(body map[string]any) bool
	}{
		{model: "gpt", f: oa, want: func(body map[string]any) bool {
			parts, _ := body["messages"].([]any)[0].(map[string]any)["content"].([]any)
			if len(parts) != 2 {
				return false
			}
			iu, _ := parts[1].(map[string]any)["image_url"].(map[string]any)
			return parts[0].(map[string]any)["text"] == "what is this?" && iu["url"] == "data:image/png;base64,"+b64 && iu["detail"] == "low"
		}},
		{model: "claude", f: an, want: func(body map[string]any) bool {
			blocks, _ := body["messages"].([]any)[0].(map[string]any)["content"].([]any)
			if len(blocks) != 2 {
				return false
			}
			src, _ := blocks[0].(map[string]any)["source"].(map[string]any)
			return blocks[0].(map[string]any)["type"] == "image" && src["type"] == "base64" && src["media_type"] == "image/png" && src["data"] == b64 &&
				blocks[1].(map[string]any)["text"] == "what is this?"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			t.Parallel()
			msg := openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart("what is this?"),
				openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64," + b64, Detail: "low"}),
			})
			if _, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: tt.model, Messages: []openai.ChatCompletionMessageParamUnion{msg}}); err != nil {
				t.Fatal(err)
			}
			var body map[string]any
			if err := json.Unmarshal(tt.f.Requests()[0].Body, &body); err != nil {
				t.Fatal(err)
			}
			if !tt.want(body) {
				t.Errorf("the provider was sent %s", tt.f.Requests()[0].Body)
			}
		})
	}
}
