package process

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
)

// Flags is what a binary's options are: they register their flags on a
// flag set (each binary's Options.BindFlags), with their defaults. The
// binary parses its arguments with them, the deployment renderer writes
// arguments from them (Render) and the Terraform import reads a
// deployment's arguments back with them (Parse): one flag set, so a flag's
// name and default are written once.
type Flags interface {
	BindFlags(fs *flag.FlagSet)
}

// Render returns the arguments that start a binary with the options
// values sets: "--name=value" for the flag of each option fields names, in
// that order, whatever its value. Both are called on one options value
// after BindFlags registered its flags with their defaults, so values
// starts from the defaults, and fields names options by their address
// (&o.Field), which is how the flags are bound to them.
func Render[T any, P interface {
	*T
	Flags
}](values func(*T), fields func(*T) []any) []string {
	var o T
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	P(&o).BindFlags(fs)
	values(&o)
	flags := flagsOf(fs, fields(&o))
	args := make([]string, len(flags))
	for i, f := range flags {
		args[i] = "--" + f.Name + "=" + f.Value.String()
	}
	return args
}

// FlagNames returns the names of the flags bound to the options fields
// names (by address, as for Render).
func FlagNames[T any, P interface {
	*T
	Flags
}](fields func(*T) []any) []string {
	var o T
	fs := flag.NewFlagSet("names", flag.ContinueOnError)
	P(&o).BindFlags(fs)
	flags := flagsOf(fs, fields(&o))
	names := make([]string, len(flags))
	for i, f := range flags {
		names[i] = f.Name
	}
	return names
}

// flagsOf returns the flags of fs bound to the addresses in fields, in
// their order. A flag's value is the address of the option it is bound to
// (the flag package's values are pointer types over the option's own type,
// and so are this package's), so the two compare as pointers. An address no
// flag is bound to is a programming error.
func flagsOf(fs *flag.FlagSet, fields []any) []*flag.Flag {
	byAddr := map[string]*flag.Flag{}
	fs.VisitAll(func(f *flag.Flag) { byAddr[fmt.Sprintf("%p", f.Value)] = f })
	out := make([]*flag.Flag, len(fields))
	for i, field := range fields {
		f, ok := byAddr[fmt.Sprintf("%p", field)]
		if !ok {
			panic(fmt.Sprintf("process: no flag is bound to option %d (%T)", i, field))
		}
		out[i] = f
	}
	return out
}

// Parse reads args as the binary whose options bind the flags of P would,
// and returns the options and the names of the flags args set. unset, if
// given, changes the options after the defaults are set and before args
// are read: what an option absent from args means when that is not the
// binary's default (arguments rendered before the default changed). An
// argument that is not one of the binary's flags is an error, as it is for
// the binary.
func Parse[T any, P interface {
	*T
	Flags
}](args []string, unset ...func(*T)) (T, map[string]bool, error) {
	var o T
	fs := flag.NewFlagSet("parse", flag.ContinueOnError)
	fs.SetOutput(discard{})
	P(&o).BindFlags(fs)
	for _, f := range unset {
		f(&o)
	}
	if err := fs.Parse(args); err != nil {
		return o, nil, err
	}
	if fs.NArg() > 0 {
		return o, nil, fmt.Errorf("unexpected argument %q: the binaries take flags only", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return o, set, nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Int32 is a flag.Value for an int32 option: fs.Var((*Int32)(&o.Field), …).
type Int32 int32

// String implements flag.Value.
func (v *Int32) String() string { return strconv.FormatInt(int64(*v), 10) }

// Set implements flag.Value.
func (v *Int32) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return err
	}
	*v = Int32(n)
	return nil
}

// List is a flag.Value for a comma-separated list option, blank items
// dropped: fs.Var((*List)(&o.Field), …).
type List []string

// String implements flag.Value.
func (v *List) String() string { return strings.Join(*v, ",") }

// Set implements flag.Value.
func (v *List) Set(s string) error {
	*v = nil
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			*v = append(*v, item)
		}
	}
	return nil
}
