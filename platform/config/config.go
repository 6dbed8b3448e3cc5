// Package config fills command-line flags from the environment, so every
// service is configured the same way in a terminal and in Kubernetes.
package config

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// EnvName is the environment variable that sets flag name: WICK_ and the
// name upper-cased with '-' and '.' turned into '_'.
func EnvName(name string) string {
	r := strings.NewReplacer("-", "_", ".", "_")
	return "WICK_" + strings.ToUpper(r.Replace(name))
}

// Parse parses args into fs, then sets every flag not given on the command
// line from its environment variable when that is set. A flag given on the
// command line wins over the environment.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || err != nil {
			return
		}
		if v, ok := os.LookupEnv(EnvName(f.Name)); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s=%q: %w", EnvName(f.Name), v, e)
			}
		}
	})
	return err
}
