package llmgw

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/platform/netguard"
)

// imageTypes are the media types of the images the gateway passes on: the
// ones OpenAI's and Anthropic's APIs both take.
var imageTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// imageRef is an image_url part of a request, read but not yet loaded.
type imageRef struct {
	msg    int // the message it belongs to
	url    string
	detail string
}

// errBadImage is a request's image the gateway cannot take: the caller's fault.
var errBadImage = errors.New("image_url")

// loadImages turns refs into images of their messages in msgs: data: URLs
// are decoded, http(s) URLs fetched through the network guard. Every image
// is bounded by MaxImageBytes and must be one of imageTypes, by its declared
// type and by its bytes.
func (s *Service) loadImages(ctx context.Context, msgs []llm.Message, refs []imageRef) error {
	if len(refs) > MaxImages {
		return fmt.Errorf("%w: a request carries at most %d images, got %d", errBadImage, MaxImages, len(refs))
	}
	for i, ref := range refs {
		img, err := s.loadImage(ctx, ref.url)
		if err != nil {
			return fmt.Errorf("messages[%d]: image %d: %w", ref.msg, i, err)
		}
		img.Detail = ref.detail
		msgs[ref.msg].Images = append(msgs[ref.msg].Images, img)
	}
	return nil
}

func (s *Service) loadImage(ctx context.Context, raw string) (llm.Image, error) {
	if rest, ok := strings.CutPrefix(raw, "data:"); ok {
		return decodeDataURL(rest)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return llm.Image{}, fmt.Errorf("%w: the url must be a data: URL or an http(s) URL", errBadImage)
	}
	ctx, cancel := context.WithTimeout(ctx, ImageFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return llm.Image{}, fmt.Errorf("%w: %v", errBadImage, err)
	}
	req.Header.Set("Accept", strings.Join(imageTypes, ", "))
	resp, err := s.images.Do(req)
	if err != nil {
		if errors.Is(err, netguard.ErrDenied) {
			return llm.Image{}, fmt.Errorf("%w: %s is not a public address; the gateway fetches images from public addresses only (-image-url-allow-nets)", errBadImage, u.Host)
		}
		if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
			return llm.Image{}, fmt.Errorf("%w: fetching %s took longer than %s", errBadImage, u.Host, ImageFetchTimeout)
		}
		return llm.Image{}, fmt.Errorf("%w: fetching %s failed", errBadImage, u.Host)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return llm.Image{}, fmt.Errorf("%w: fetching %s answered %s", errBadImage, u.Host, resp.Status)
	}
	if resp.ContentLength > MaxImageBytes {
		return llm.Image{}, fmt.Errorf("%w: the image at %s is %d bytes; at most %d are taken", errBadImage, u.Host, resp.ContentLength, MaxImageBytes)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxImageBytes+1))
	if err != nil {
		return llm.Image{}, fmt.Errorf("%w: reading the image at %s failed", errBadImage, u.Host)
	}
	if len(data) > MaxImageBytes {
		return llm.Image{}, fmt.Errorf("%w: the image at %s is larger than %d bytes", errBadImage, u.Host, MaxImageBytes)
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return checkImage(mt, data)
}

// decodeDataURL reads "<media type>;base64,<data>", the part of a data: URL
// after its scheme.
func decodeDataURL(rest string) (llm.Image, error) {
	meta, payload, ok := strings.Cut(rest, ",")
	mt, enc, _ := strings.Cut(meta, ";")
	if !ok || enc != "base64" {
		return llm.Image{}, fmt.Errorf("%w: a data: URL must be data:<image type>;base64,<data>", errBadImage)
	}
	if base64.StdEncoding.DecodedLen(len(payload)) > MaxImageBytes+2 {
		return llm.Image{}, fmt.Errorf("%w: the image is larger than %d bytes", errBadImage, MaxImageBytes)
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return llm.Image{}, fmt.Errorf("%w: the data: URL is not valid base64", errBadImage)
	}
	if len(data) > MaxImageBytes {
		return llm.Image{}, fmt.Errorf("%w: the image is larger than %d bytes", errBadImage, MaxImageBytes)
	}
	return checkImage(strings.ToLower(mt), data)
}

// checkImage accepts data declared as media type mt when both the
// declaration and the bytes say it is one of imageTypes, and the same one.
func checkImage(mt string, data []byte) (llm.Image, error) {
	if !slices.Contains(imageTypes, mt) {
		return llm.Image{}, fmt.Errorf("%w: type %q is not supported (%s)", errBadImage, mt, strings.Join(imageTypes, ", "))
	}
	if sniffed := http.DetectContentType(data); sniffed != mt {
		return llm.Image{}, fmt.Errorf("%w: the data is not %s (it looks like %s)", errBadImage, mt, sniffed)
	}
	return llm.Image{MediaType: mt, Data: data}, nil
}
