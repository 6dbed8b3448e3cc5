// Command rulecheck checks Prometheus rule files with Prometheus's own
// parser and validator (model/rulefmt, promql/parser): the checks of
// `promtool check rules`, without the service-discovery plugins that make
// promtool a build of minutes. It prints each problem and exits 1 if any.
//
//	rulecheck alerts.yml [more.yml …]
package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: rulecheck FILE…")
		os.Exit(2)
	}
	p := parser.NewParser(parser.Options{})
	failed := false
	for _, f := range os.Args[1:] {
		groups, errs := rulefmt.ParseFile(f, false, model.UTF8Validation, p, slog.New(slog.DiscardHandler))
		for _, err := range errs {
			fmt.Fprintln(os.Stderr, err)
			failed = true
		}
		if len(errs) == 0 {
			n := 0
			for _, g := range groups.Groups {
				n += len(g.Rules)
			}
			fmt.Printf("%s: %d rules\n", f, n)
		}
	}
	if failed {
		os.Exit(1)
	}
}
