package openapi

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/wick-agent/wick/platform/testenv"
)

func TestDocumentIsCurrent(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "gen", "openapi", "wick.swagger.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(Document, want) {
		t.Fatal("internal/openapi/wick.swagger.json differs from gen/openapi: run go generate ./... in services/gateway")
	}
	if !json.Valid(Document) {
		t.Fatal("the OpenAPI document is not JSON")
	}
}
