// Package hashembed is an embedding model that needs no provider and no key:
// word unigrams and bigrams and character 3–5-grams of the words are hashed
// (FNV-1a) into a fixed number of signed buckets, weighted by sublinear term
// frequency and L2-normalised. It is deterministic, so `make run`, the demo and
// the tests retrieve real neighbours — texts that share words and word parts —
// without a network. It knows no synonyms: scores of related texts run lower
// than a neural model's, which is why retrieval uses a lower default minimum
// score for it (docs/knowledge.md).
package hashembed

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// Model names are ModelPrefix followed by the number of dimensions.
const (
	ModelPrefix       = "wick-hash-"
	DefaultDimensions = 384
	DefaultModel      = "wick-hash-384"
	MinDimensions     = 16
	MaxDimensions     = 4096
)

// Weights of the feature kinds: whole words say most about meaning, bigrams
// add word order, character n-grams match inflections ("embed", "embedding").
const (
	unigramWeight = 1.0
	bigramWeight  = 0.7
	charWeight    = 0.25
	minCharGram   = 3
	maxCharGram   = 5
)

// ErrModel is returned for a model name that is not ModelPrefix<dims>.
var ErrModel = errors.New("not a wick-hash model")

// ParseModel returns the dimensions of a model name like "wick-hash-384".
func ParseModel(name string) (int, error) {
	rest, ok := strings.CutPrefix(name, ModelPrefix)
	if !ok {
		return 0, fmt.Errorf("%w: %q", ErrModel, name)
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < MinDimensions || n > MaxDimensions {
		return 0, fmt.Errorf("%w: %q needs a dimension count in %d..%d after %q", ErrModel, name, MinDimensions, MaxDimensions, ModelPrefix)
	}
	return n, nil
}

// IsModel reports whether name is a wick-hash model name.
func IsModel(name string) bool {
	_, err := ParseModel(name)
	return err == nil
}

// Embedder embeds texts into Dimensions buckets. It holds no state beyond
// its size, so one Embedder may be used by any number of goroutines.
type Embedder struct {
	dims int
}

// New returns an Embedder of dims dimensions.
func New(dims int) (*Embedder, error) {
	if dims < MinDimensions || dims > MaxDimensions {
		return nil, fmt.Errorf("hashembed: dimensions %d outside %d..%d", dims, MinDimensions, MaxDimensions)
	}
	return &Embedder{dims: dims}, nil
}

// Dimensions is the size of every vector.
func (e *Embedder) Dimensions() int { return e.dims }

// Embed returns the L2-normalised vector of text. A text with no words gives
// the zero vector, which is similar to nothing.
func (e *Embedder) Embed(text string) []float32 {
	words := Words(text)
	type feature struct{ count, weight float64 }
	features := make(map[uint64]feature, len(words)*10)
	add := func(h uint64, weight float64) {
		f := features[h]
		f.count++
		f.weight = weight
		features[h] = f
	}
	var starts []int
	for i, w := range words {
		add(fnvString(fnvByte(offset64, 'w'), w), unigramWeight)
		if i > 0 {
			add(fnvString(fnvString(fnvByte(offset64, 'b'), words[i-1]), w), bigramWeight)
		}
		// Character n-grams of "^word$", cut on rune boundaries.
		padded := "^" + w + "$"
		starts = starts[:0]
		for j := range padded {
			starts = append(starts, j)
		}
		starts = append(starts, len(padded))
		runes := len(starts) - 1
		for n := minCharGram; n <= maxCharGram; n++ {
			for j := 0; j+n <= runes; j++ {
				add(fnvString(fnvByte(offset64, 'c'), padded[starts[j]:starts[j+n]]), charWeight)
			}
		}
	}
	vec := make([]float64, e.dims)
	for h, f := range features {
		// Sublinear: a word said ten times is not ten times the topic.
		w := f.weight * (1 + math.Log(f.count))
		if h>>63 == 1 {
			w = -w // signed buckets: collisions cancel out on average instead of adding up
		}
		vec[h%uint64(e.dims)] += w
	}
	return normalise(vec)
}

// FNV-1a, 64 bits, written out so that hashing a feature allocates nothing.
const (
	offset64 = 14695981039346656037
	prime64  = 1099511628211
)

func fnvByte(h uint64, b byte) uint64 { return (h ^ uint64(b)) * prime64 }

// fnvString hashes s followed by a 0 byte, so that ("ab","c") and ("a","bc")
// differ.
func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = fnvByte(h, s[i])
	}
	return fnvByte(h, 0)
}

func normalise(v []float64) []float32 {
	var sum float64
	for _, x := range v {
		sum += x * x
	}
	out := make([]float32, len(v))
	if sum == 0 {
		return out
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range v {
		out[i] = float32(x * inv)
	}
	return out
}

// Words splits text into lower-case words of letters and digits, leaving out
// common English function words, which carry no topic.
func Words(text string) []string {
	fields := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	out := fields[:0]
	for _, f := range fields {
		if !stopWords[f] {
			out = append(out, f)
		}
	}
	return out
}

var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be but by can do does for from has have how i if in into is it its
		of on or our so than that the their them then there these they this to was we were what when where which who
		why will with you your`) {
		m[w] = true
	}
	return m
}()
