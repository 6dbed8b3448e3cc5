// Package placement spreads sandboxes over many sandbox services, each the
// owner of one Docker engine: every (user, agent) sandbox lives on the
// endpoint that rendezvous (highest-random-weight) hashing picks for it, so
// adding an endpoint moves only the sandboxes it now wins (about 1/N) and
// every agent replica, given the same endpoints, picks the same one.
package placement

import "hash/fnv"

// Score is endpoint's weight for the sandbox of (user, agent); the endpoint
// with the highest score holds it. FNV-1a over the three strings, each
// ended by a NUL (user and agent ids are validated and hold none; addresses
// are host:port), then murmur3's 64-bit finaliser: FNV alone mixes its last
// bytes poorly, and endpoints or keys differing in one trailing digit would
// then rank alike. The value must never change: a different hash moves
// every sandbox to a new engine, away from its workspace.
func Score(endpoint, user, agent string) uint64 {
	h := fnv.New64a()
	for _, s := range [...]string{endpoint, user, agent} {
		_, _ = h.Write([]byte(s))
		_, _ = h.Write([]byte{0})
	}
	return fmix64(h.Sum64())
}

// fmix64 is murmur3's finaliser: every input bit flips each output bit
// with probability close to one half.
func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// Pick returns the endpoint with the highest Score for (user, agent), ties
// going to the smaller address so the order of endpoints never matters;
// "" when there are none.
func Pick(endpoints []string, user, agent string) string {
	var best string
	var bestScore uint64
	for _, e := range endpoints {
		s := Score(e, user, agent)
		if best == "" || s > bestScore || (s == bestScore && e < best) {
			best, bestScore = e, s
		}
	}
	return best
}
