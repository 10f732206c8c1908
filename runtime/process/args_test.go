package process

import (
	"flag"
	"slices"
	"strings"
	"testing"
	"time"
)

// sample is a binary's options as the tests of this file need them.
type sample struct {
	Name    string
	On      bool
	Period  time.Duration
	Timeout int32
	Groups  []string
}

func (s *sample) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&s.Name, "name", "default-name", "")
	fs.BoolVar(&s.On, "on", true, "")
	fs.DurationVar(&s.Period, "period", time.Minute, "")
	s.Timeout = 10
	fs.Var((*Int32)(&s.Timeout), "timeout", "")
	fs.Var((*List)(&s.Groups), "groups", "")
}

// TestRenderAndParse: the arguments rendered from options name the fields
// asked for, in their order, with their values, defaults included; parsing
// them gives the options back, and says which flags they set.
func TestRenderAndParse(t *testing.T) {
	fields := func(s *sample) []any { return []any{&s.On, &s.Name, &s.Timeout, &s.Groups} }
	args := Render(func(s *sample) {
		s.Name = "x"
		s.Groups = []string{"a", "b"}
	}, fields)
	want := []string{"--on=true", "--name=x", "--timeout=10", "--groups=a,b"}
	if !slices.Equal(args, want) {
		t.Fatalf("Render = %v, want %v", args, want)
	}
	if names := FlagNames(fields); !slices.Equal(names, []string{"on", "name", "timeout", "groups"}) {
		t.Fatalf("FlagNames = %v", names)
	}
	got, set, err := Parse[sample](append(args, "--period=5s"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "x" || !got.On || got.Timeout != 10 || !slices.Equal(got.Groups, []string{"a", "b"}) || got.Period != 5*time.Second {
		t.Fatalf("Parse = %+v", got)
	}
	if !set["period"] || !set["groups"] || set["missing"] {
		t.Fatalf("set = %v", set)
	}
	defaults, set, err := Parse[sample](nil)
	if err != nil || defaults.Name != "default-name" || !defaults.On || defaults.Timeout != 10 || len(set) != 0 {
		t.Fatalf("Parse(nil) = %+v, %v, %v", defaults, set, err)
	}
	// Arguments rendered when an option's default was another.
	old, _, err := Parse(nil, func(s *sample) { s.On = false })
	if err != nil || old.On {
		t.Fatalf("Parse(nil, unset) = %+v, %v", old, err)
	}
	if explicit, _, _ := Parse([]string{"--on=true"}, func(s *sample) { s.On = false }); !explicit.On {
		t.Fatalf("an explicit value must win over unset")
	}
}

// TestParseRefuses: what the binary would refuse, the import refuses too.
func TestParseRefuses(t *testing.T) {
	for _, args := range [][]string{{"--unknown=1"}, {"--timeout=x"}, {"--timeout=99999999999"}, {"stray"}} {
		if _, _, err := Parse[sample](args); err == nil {
			t.Errorf("Parse(%v) succeeded", args)
		}
	}
}

// TestRenderUnboundFieldPanics: a field no flag is bound to is a mistake in
// the caller, found at once.
func TestRenderUnboundFieldPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "no flag is bound") {
			t.Fatalf("recovered %v", r)
		}
	}()
	var other string
	Render(func(*sample) {}, func(*sample) []any { return []any{&other} })
}
