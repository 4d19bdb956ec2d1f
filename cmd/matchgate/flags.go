package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// flagSet is a flag.FlagSet whose every flag defaults to its environment
// twin: --redis-url ↔ MATCHGATE_REDIS_URL.
type flagSet struct {
	*flag.FlagSet
	getenv func(string) string
	errs   []error
}

func newFlagSet(name string, getenv func(string) string, out io.Writer) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	return &flagSet{FlagSet: fs, getenv: getenv}
}

func envName(flagName string) string {
	return "MATCHGATE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

func (f *flagSet) env(name string) (string, bool) {
	v := f.getenv(envName(name))
	return v, v != ""
}

func (f *flagSet) help(name, usage string) string {
	return usage + " (env " + envName(name) + ")"
}

func (f *flagSet) String(name, def, usage string) *string {
	if v, ok := f.env(name); ok {
		def = v
	}
	return f.FlagSet.String(name, def, f.help(name, usage))
}

// Secret is String for a credential (a key, a token, a URL that may hold a
// password): its environment twin is used the same way, but help never
// prints the value as the default.
func (f *flagSet) Secret(name, usage string) *string {
	v, _ := f.env(name)
	f.FlagSet.Var(secretValue{&v}, name, f.help(name, usage))
	return &v
}

// secretValue is a string flag whose value help never prints.
type secretValue struct{ p *string }

func (v secretValue) String() string { return "" }

func (v secretValue) Set(s string) error {
	*v.p = s
	return nil
}

func (f *flagSet) Bool(name string, def bool, usage string) *bool {
	if v, ok := f.env(name); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			f.errs = append(f.errs, fmt.Errorf("%s: %w", envName(name), err))
		}
		def = b
	}
	return f.FlagSet.Bool(name, def, f.help(name, usage))
}

func (f *flagSet) Duration(name string, def time.Duration, usage string) *time.Duration {
	if v, ok := f.env(name); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			f.errs = append(f.errs, fmt.Errorf("%s: %w", envName(name), err))
		}
		def = d
	}
	return f.FlagSet.Duration(name, def, f.help(name, usage))
}

// parse parses args and reports bad environment values too.
func (f *flagSet) parse(args []string) error {
	if err := f.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return errHelp
		}
		return err
	}
	if f.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", f.Args())
	}
	if len(f.errs) > 0 {
		return f.errs[0]
	}
	return nil
}
