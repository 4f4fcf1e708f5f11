// compose-config loads a Compose file with Compose v2's own loader (compose-spec's compose-go, the
// library `docker compose` is built on), with no container engine, and prints the resulting model
// as JSON, like `docker compose config --format json`: validated against the Compose Specification,
// interpolated from the environment (`${VAR:?message}` fails naming VAR), merges resolved, normalized.
//
//	compose-config [--profile NAME ...] FILE
//
// Every profile is enabled unless --profile narrows them, so services of optional profiles are
// loaded and checked too. No .env file is read: the environment is the caller's, exactly.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
)

type profiles []string

func (p *profiles) String() string     { return strings.Join(*p, ",") }
func (p *profiles) Set(v string) error { *p = append(*p, v); return nil }

func main() {
	var active profiles
	flag.Var(&active, "profile", "enable only this profile (repeatable; default: every profile)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: compose-config [--profile NAME ...] FILE")
		os.Exit(2)
	}
	if len(active) == 0 {
		active = profiles{"*"}
	}
	file, err := filepath.Abs(flag.Arg(0))
	if err != nil {
		fail(err)
	}
	options, err := cli.NewProjectOptions([]string{file},
		cli.WithWorkingDirectory(filepath.Dir(file)),
		cli.WithOsEnv,
		cli.WithProfiles(active),
	)
	if err != nil {
		fail(err)
	}
	project, err := options.LoadProject(context.Background())
	if err != nil {
		fail(err)
	}
	out, err := project.MarshalJSON()
	if err != nil {
		fail(err)
	}
	os.Stdout.Write(append(out, '\n'))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
