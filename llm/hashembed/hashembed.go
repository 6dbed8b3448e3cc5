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
	"hash/fnv"
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
	features := make(map[uint64]*feature, len(words)*10)
	add := func(weight float64, kind byte, parts ...string) {
		h := fnv.New64a()
		h.Write([]byte{kind})
		for _, p := range parts {
			h.Write([]byte(p))
			h.Write([]byte{0})
		}
		k := h.Sum64()
		if f, ok := features[k]; ok {
			f.count++
			return
		}
		features[k] = &feature{count: 1, weight: weight}
	}
	for i, w := range words {
		add(unigramWeight, 'w', w)
		if i > 0 {
			add(bigramWeight, 'b', words[i-1], w)
		}
		r := []rune("^" + w + "$")
		for n := minCharGram; n <= maxCharGram; n++ {
			for j := 0; j+n <= len(r); j++ {
				add(charWeight, 'c', string(r[j:j+n]))
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
