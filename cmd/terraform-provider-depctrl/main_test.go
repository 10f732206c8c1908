package main

import (
	"bytes"
	"errors"
	"flag"
	"regexp"
	"slices"
	"testing"
)

// TestHelpListsOnlyThePluginsFlags: --help names -debug and -version and
// nothing else, although a linked dependency registers -kubeconfig on the
// global flag set.
func TestHelpListsOnlyThePluginsFlags(t *testing.T) {
	if flag.CommandLine.Lookup("kubeconfig") == nil {
		t.Log("no dependency registers -kubeconfig on the global flag set any more")
	}
	var out bytes.Buffer
	if _, err := parseFlags("terraform-provider-depctrl", []string{"--help"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v, want flag.ErrHelp", err)
	}
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z-]+)`).FindAllStringSubmatch(out.String(), -1) {
		listed = append(listed, m[1])
	}
	if !slices.Equal(listed, []string{"debug", "version"}) {
		t.Errorf("--help lists %v, want [debug version]:\n%s", listed, out.String())
	}
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags("p", []string{"-debug"}, &bytes.Buffer{})
	if err != nil || !o.debug || o.showVersion {
		t.Errorf("-debug: %+v, %v", o, err)
	}
	if _, err := parseFlags("p", []string{"-kubeconfig=x"}, &bytes.Buffer{}); err == nil {
		t.Error("-kubeconfig accepted")
	}
}
