package threads

import (
	json "github.com/goccy/go-json"
)

// The thread codec is goccy/go-json, a drop-in for encoding/json that is
// several times faster on large states: a save and a load of a 200-message
// thread are dominated by encoding, not by the Redis round trip.
var (
	marshal   = json.Marshal
	unmarshal = json.Unmarshal
)
