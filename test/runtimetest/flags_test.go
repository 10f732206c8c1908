package runtimetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
)

// TestEveryFlagDocumented: each flag a runtime binary accepts appears in
// the guide for running it as a process, and the guide names no flag the
// binary does not accept.
func TestEveryFlagDocumented(t *testing.T) {
	root, err := env.RepoRoot()
	check.Must(t, err)
	guide, err := os.ReadFile(filepath.Join(root, "docs", "guides", "processes.md"))
	check.Must(t, err)
	bin := Binaries(t)
	flagLine := regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`)
	// The flags a table documents are those in the first cell of its rows.
	firstCell := regexp.MustCompile(`(?m)^\| ([^|]+) \|`)
	documented := map[string]map[string]bool{}
	for _, part := range strings.Split(string(guide), "\n### `")[1:] {
		name, table, _ := strings.Cut(part, "`")
		documented[name] = map[string]bool{}
		for _, cell := range firstCell.FindAllStringSubmatch(table, -1) {
			for _, f := range regexp.MustCompile("`--([a-z0-9-]+)`").FindAllStringSubmatch(cell[1], -1) {
				documented[name][f[1]] = true
			}
		}
	}
	for _, name := range []string{"depctrl-webhook", "depctrl-controller"} {
		t.Run(name, func(t *testing.T) {
			out, _ := exec.Command(filepath.Join(bin, name), "-help").CombinedOutput()
			flags := flagLine.FindAllStringSubmatch(string(out), -1)
			if len(flags) < 10 {
				t.Fatalf("%s -help listed %d flags:\n%s", name, len(flags), out)
			}
			table := documented[name]
			if len(table) == 0 {
				t.Fatalf("the guide has no table of flags for %s", name)
			}
			accepted := map[string]bool{}
			for _, f := range flags {
				accepted[f[1]] = true
				if !table[f[1]] {
					t.Errorf("%s accepts --%s, which the guide's table does not document", name, f[1])
				}
			}
			for f := range table {
				if !accepted[f] {
					t.Errorf("the guide's table for %s documents --%s, which it does not accept", name, f)
				}
			}
		})
	}
}
