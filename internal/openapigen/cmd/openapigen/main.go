// Command openapigen writes gen/openapi/wick.openapi.json from the documents
// protoc-gen-openapiv3 generated into a directory (`make gen` runs it).
//
//	openapigen -o gen/openapi/wick.openapi.json DIR
//
// DIR holds one <proto path without .proto>.openapi.json per proto file; the
// proto descriptors come from the generated Go packages linked in here.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"google.golang.org/protobuf/reflect/protoregistry"

	// The packages of every proto file with HTTP rules: their descriptors
	// name the fields and routes the document describes.
	_ "github.com/wick-agent/wick/gen/wick/agent/v1"

	"github.com/wick-agent/wick/internal/openapigen"
)

const suffix = ".openapi.json"

func main() {
	out := flag.String("o", "", "the document to write")
	flag.Parse()
	if *out == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: openapigen -o FILE DIR")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *out); err != nil {
		fmt.Fprintln(os.Stderr, "openapigen:", err)
		os.Exit(1)
	}
}

func run(dir, out string) error {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, suffix) {
			names = append(names, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return fmt.Errorf("no %s files in %s", suffix, dir)
	}
	slices.Sort(names)
	var gen []openapigen.Generated
	for _, name := range names {
		rel, err := filepath.Rel(dir, name)
		if err != nil {
			return err
		}
		protoPath := filepath.ToSlash(strings.TrimSuffix(rel, suffix)) + ".proto"
		fd, err := protoregistry.GlobalFiles.FindFileByPath(protoPath)
		if errors.Is(err, protoregistry.NotFound) {
			return fmt.Errorf("%s: %s is not linked into openapigen: import its Go package in %s", name, protoPath, "internal/openapigen/cmd/openapigen")
		}
		if err != nil {
			return err
		}
		b, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		gen = append(gen, openapigen.Generated{File: fd, JSON: b})
	}
	doc, err := openapigen.Build(gen, protoregistry.GlobalFiles)
	if err != nil {
		return err
	}
	return os.WriteFile(out, doc, 0o644)
}
