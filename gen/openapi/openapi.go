// Package openapi embeds the OpenAPI 3.1 document that `make gen` generates
// from the protos (docs/api.md), so the gateway serves exactly what the
// protos say.
package openapi

import (
	_ "embed"
	"encoding/json"
	"sync"
)

// Document is the OpenAPI 3.1 document of the gateway's API.
//
//go:embed wick.openapi.json
var Document []byte

// Version returns the API version the document describes (its
// info.version), the version clients generated from it carry.
func Version() string { return version() }

var version = sync.OnceValue(func() string {
	var d struct {
		Info struct {
			Version string `json:"version"`
		} `json:"info"`
	}
	if err := json.Unmarshal(Document, &d); err != nil {
		panic("openapi: the embedded document is not JSON: " + err.Error())
	}
	return d.Info.Version
})
