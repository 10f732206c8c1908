package runtimetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/depctrl/terraform-provider-depctrl/internal/deploy"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
)

// helpDefaults runs a runtime binary with -help and returns each flag's
// default as the flag package prints it, unquoted; flags printed without a
// default are left out.
func helpDefaults(t *testing.T, name string) map[string]string {
	t.Helper()
	out, _ := exec.Command(filepath.Join(Binaries(t), name), "-help").CombinedOutput()
	block := regexp.MustCompile(`(?m)^  -([a-z0-9-]+)[^\n]*\n((?:    \t[^\n]*\n?)*)`)
	def := regexp.MustCompile(`\(default ([^()]*)\)\s*$`)
	defaults := map[string]string{}
	for _, m := range block.FindAllStringSubmatch(string(out), -1) {
		if d := def.FindStringSubmatch(m[2]); d != nil {
			defaults[m[1]] = strings.Trim(d[1], `"`)
		}
	}
	if len(defaults) < 5 {
		t.Fatalf("%s -help printed %d defaults:\n%s", name, len(defaults), out)
	}
	return defaults
}

// TestDefaultPortsMatchDeployment: the metrics and probe addresses each
// binary defaults to are the ports depctrl_runtime renders for its pods,
// and the controller's and the webhook's differ, so that both run on one
// host with their defaults.
func TestDefaultPortsMatchDeployment(t *testing.T) {
	want := map[string][2]int{
		"depctrl-controller": {deploy.ControllerMetricsPort, deploy.ControllerProbePort},
		"depctrl-webhook":    {deploy.WebhookMetricsPort, deploy.WebhookProbePort},
	}
	seen := map[string]string{}
	for name, ports := range want {
		d := helpDefaults(t, name)
		for i, flag := range []string{"metrics-bind-address", "health-probe-bind-address"} {
			if got, w := d[flag], ":"+strconv.Itoa(ports[i]); got != w {
				t.Errorf("%s --%s defaults to %q; depctrl_runtime renders %q", name, flag, got, w)
			}
			if other, ok := seen[d[flag]]; ok {
				t.Errorf("%s and %s both default to %s", other, name, d[flag])
			}
			seen[d[flag]] = name
		}
	}
}

// TestFlagDefaultsDocumented: where the process guide's table documents one
// flag in a row, its default column starts with the default the binary
// prints.
func TestFlagDefaultsDocumented(t *testing.T) {
	root, err := env.RepoRoot()
	check.Must(t, err)
	guide, err := os.ReadFile(filepath.Join(root, "docs", "guides", "processes.md"))
	check.Must(t, err)
	row := regexp.MustCompile("(?m)^\\| `--([a-z0-9-]+)` \\| ([^|]*) \\|")
	firstValue := regexp.MustCompile("`([^`]*)`")
	for _, part := range strings.Split(string(guide), "\n### `")[1:] {
		name, table, _ := strings.Cut(part, "`")
		t.Run(name, func(t *testing.T) {
			defaults := helpDefaults(t, name)
			checked := 0
			for _, r := range row.FindAllStringSubmatch(table, -1) {
				flag, cell := r[1], r[2]
				want, ok := defaults[flag]
				if !ok {
					continue
				}
				got := firstValue.FindStringSubmatch(cell)
				if got == nil || got[1] != want {
					t.Errorf("the guide gives --%s the default %q; %s prints %q", flag, strings.TrimSpace(cell), name, want)
				}
				checked++
			}
			if checked < 5 {
				t.Errorf("only %d defaults of %s checked against the guide", checked, name)
			}
		})
	}
}
