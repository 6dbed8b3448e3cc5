// Package openapi holds the OpenAPI document generated from the protos:
// gen/openapi/wick.swagger.json, copied here by `go generate` because an
// embed pattern cannot reach outside the module. A test keeps the copy current.
package openapi

import _ "embed"

//go:generate cp ../../../../gen/openapi/wick.swagger.json wick.swagger.json

// Document is the OpenAPI 2 document of the REST API.
//
//go:embed wick.swagger.json
var Document []byte
