// Command wickfs runs one workspace operation and prints the result as a JSON
// envelope on stdout: {"ok":true,"data":…} or {"ok":false,"error":"…"} with
// exit status 1. It is the Docker-exec fallback of the sandbox service, so it
// is built static and needs nothing in the container but itself and sh.
//
//	wickfs [-root DIR] [-prefix PATH] <command> [args…]
//
//	ls [path]                       list a directory
//	read [-offset N -limit N] path  read a file (a window of lines with -offset/-limit)
//	write path                      write stdin to a file
//	edit path                       edit a file; stdin: {"old_text","new_text","replace_all"}
//	grep pattern [path]             search file contents (RE2)
//	glob pattern [path]             find files by name or ** path pattern
//	exec [-timeout D -max-output N -workdir DIR -env K=V…] [--] command…
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/wick-agent/wick/wickfs"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout)
	stop()
	os.Exit(code)
}

func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

// run executes one command line and returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) int {
	gfs := flag.NewFlagSet("wickfs", flag.ContinueOnError)
	gfs.SetOutput(io.Discard)
	root := gfs.String("root", envOr("WICKFS_ROOT", wickfs.DefaultPrefix), "workspace directory (WICKFS_ROOT)")
	prefix := gfs.String("prefix", envOr("WICKFS_PREFIX", wickfs.DefaultPrefix), "agent-facing path of the workspace (WICKFS_PREFIX)")
	maxWrite := gfs.Int64("max-write-bytes", wickfs.DefaultMaxWriteBytes, "largest content write and edit accept")
	if err := gfs.Parse(args); err != nil {
		return fail(stdout, fmt.Errorf("%w: %v", wickfs.ErrInvalidArgument, err))
	}
	args = gfs.Args()
	if len(args) == 0 {
		return fail(stdout, wickfs.NewError(wickfs.ErrInvalidArgument, "usage: wickfs <ls|read|write|edit|grep|glob|exec> [args…]"))
	}
	fsys, err := wickfs.NewLocalFS(*root, wickfs.WithPrefix(*prefix), wickfs.WithMaxWriteBytes(*maxWrite))
	if err != nil {
		return fail(stdout, err)
	}
	defer fsys.Close()
	data, err := dispatch(ctx, fsys, args[0], args[1:], stdin, *maxWrite)
	if err != nil {
		return fail(stdout, err)
	}
	return ok(stdout, data)
}

func usage(msg string) error { return wickfs.NewError(wickfs.ErrInvalidArgument, "usage: wickfs "+msg) }

func dispatch(ctx context.Context, fsys *wickfs.LocalFS, cmd string, args []string, stdin io.Reader, maxWrite int64) (any, error) {
	switch cmd {
	case "ls":
		p := ""
		if len(args) > 0 {
			p = args[0]
		}
		return fsys.Ls(ctx, p)
	case "read":
		fl := flag.NewFlagSet("read", flag.ContinueOnError)
		fl.SetOutput(io.Discard)
		offset := fl.Int("offset", -1, "first line, 0-based")
		limit := fl.Int("limit", 0, "most lines")
		if err := fl.Parse(args); err != nil || fl.NArg() != 1 {
			return nil, usage("read [-offset N] [-limit N] <path>")
		}
		if *offset >= 0 || *limit > 0 {
			return fsys.ReadLines(ctx, fl.Arg(0), max(*offset, 0), *limit)
		}
		return fsys.ReadFile(ctx, fl.Arg(0))
	case "write":
		if len(args) != 1 {
			return nil, usage("write <path> (content on stdin)")
		}
		content, err := readLimited(stdin, maxWrite)
		if err != nil {
			return nil, err
		}
		return fsys.WriteFile(ctx, args[0], string(content))
	case "edit":
		if len(args) != 1 {
			return nil, usage(`edit <path> (stdin: {"old_text":…,"new_text":…})`)
		}
		raw, err := readLimited(stdin, 2*maxWrite)
		if err != nil {
			return nil, err
		}
		var in wickfs.EditInput
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, wickfs.NewError(wickfs.ErrInvalidArgument, "edit: stdin is not the JSON {\"old_text\",\"new_text\"}: "+err.Error())
		}
		var opts []wickfs.EditOption
		if in.ReplaceAll {
			opts = append(opts, wickfs.ReplaceAll())
		}
		return fsys.EditFile(ctx, args[0], in.OldText, in.NewText, opts...)
	case "grep", "glob":
		args = dropDashes(args)
		if len(args) < 1 || len(args) > 2 {
			return nil, usage(cmd + " <pattern> [path]")
		}
		p := ""
		if len(args) == 2 {
			p = args[1]
		}
		if cmd == "grep" {
			return fsys.Grep(ctx, args[0], p)
		}
		return fsys.Glob(ctx, args[0], p)
	case "exec":
		return execCmd(ctx, fsys, args)
	}
	return nil, usage("<ls|read|write|edit|grep|glob|exec> [args…]: unknown command " + fmt.Sprintf("%q", cmd))
}

func dropDashes(args []string) []string {
	if len(args) > 0 && args[0] == "--" {
		return args[1:]
	}
	return args
}

type envFlag map[string]string

func (e envFlag) String() string { return "" }

func (e envFlag) Set(v string) error {
	k, val, found := strings.Cut(v, "=")
	if !found || k == "" {
		return errors.New("want KEY=VALUE")
	}
	e[k] = val
	return nil
}

func execCmd(ctx context.Context, fsys *wickfs.LocalFS, args []string) (any, error) {
	fl := flag.NewFlagSet("exec", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	timeout := fl.Duration("timeout", 0, "time limit")
	maxOut := fl.Int64("max-output", 0, "cap on stdout plus stderr")
	workdir := fl.String("workdir", "", "working directory")
	env := envFlag{}
	fl.Var(env, "env", "KEY=VALUE, repeatable")
	if err := fl.Parse(args); err != nil || fl.NArg() == 0 {
		return nil, usage("exec [-timeout D] [-max-output N] [-workdir DIR] [-env K=V]… [--] <command>")
	}
	return fsys.Exec(ctx, strings.Join(fl.Args(), " "),
		wickfs.WithTimeout(*timeout), wickfs.WithMaxOutput(*maxOut), wickfs.WithWorkdir(*workdir), wickfs.WithEnv(env))
}

// readLimited reads stdin whole, refusing more than max bytes before anything is written.
func readLimited(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("read stdin: %w", err)
	}
	if int64(len(b)) > max {
		return nil, wickfs.NewError(wickfs.ErrTooLarge, fmt.Sprintf("input is more than the %d-byte limit; nothing was written", max))
	}
	return b, nil
}

func ok(w io.Writer, data any) int {
	out, err := json.Marshal(wickfs.Response{OK: true, Data: mustRaw(data)})
	if err != nil {
		return fail(w, err)
	}
	fmt.Fprintln(w, string(out))
	return 0
}

func mustRaw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(nil)
	}
	return b
}

func fail(w io.Writer, err error) int {
	out, _ := json.Marshal(wickfs.Response{OK: false, Error: err.Error(), Kind: wickfs.ErrorKind(err)})
	fmt.Fprintln(w, string(out))
	return 1
}
