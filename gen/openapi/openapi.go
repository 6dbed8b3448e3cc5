// Package openapi embeds the OpenAPI document that `make gen` generates from
// the protos, so the gateway serves exactly what the protos say.
package openapi

import _ "embed"

// Document is the OpenAPI 2 document of the REST API.
//
//go:embed wick.swagger.json
var Document []byte
