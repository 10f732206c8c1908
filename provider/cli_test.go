package provider

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// The acceptance tests run with the CLI that TF_ACC_TERRAFORM_PATH names
// (else terraform on PATH): Terraform 1.11.4, 1.16.4 or OpenTofu 1.12.6 in
// CI (make testacc-matrix). What a CLI cannot do is skipped with the reason
// in the skip message, never left out silently: whole test cases through
// their TerraformVersionChecks, steps inside a test case through
// cliSteps, which names the skipped part in a subtest that says why.

// cli is the CLI under test, as its `version` command reports it.
type cli struct {
	Name    string // "Terraform" or "OpenTofu"
	Version string // such as 1.16.4
	Path    string
	err     error
}

var (
	cliOnce  sync.Once
	cliFound cli
)

var cliVersionRE = regexp.MustCompile(`^(Terraform|OpenTofu) v(\d+)\.(\d+)\.(\d+)\S*`)

// cliUnderTest finds the CLI the way terraform-plugin-testing does
// (TF_ACC_TERRAFORM_PATH, else terraform on PATH) and asks its version.
func cliUnderTest() cli {
	cliOnce.Do(func() {
		p := os.Getenv("TF_ACC_TERRAFORM_PATH")
		if p == "" {
			var err error
			if p, err = exec.LookPath("terraform"); err != nil {
				cliFound.err = fmt.Errorf("no TF_ACC_TERRAFORM_PATH and no terraform on PATH")
				return
			}
		}
		out, err := exec.Command(p, "version").Output()
		if err != nil {
			cliFound.err = fmt.Errorf("%s version: %w", p, err)
			return
		}
		// Warnings about the CLI configuration may come first.
		var m []string
		for _, line := range strings.Split(string(out), "\n") {
			if m = cliVersionRE.FindStringSubmatch(line); m != nil {
				break
			}
		}
		if m == nil {
			cliFound.err = fmt.Errorf("%s version printed %q, with no line Terraform or OpenTofu vX.Y.Z", p, out)
			return
		}
		cliFound = cli{Name: m[1], Version: fmt.Sprintf("%s.%s.%s", m[2], m[3], m[4]), Path: p}
	})
	return cliFound
}

func (c cli) String() string { return c.Name + " " + c.Version }

// atLeast reports whether c's version is major.minor or later.
func (c cli) atLeast(major, minor int) bool {
	var ma, mi, pa int
	_, _ = fmt.Sscanf(c.Version, "%d.%d.%d", &ma, &mi, &pa)
	return ma > major || (ma == major && mi >= minor)
}

// identityUnsupported says why c cannot import by identity and keep
// identities in state, or "" when it can: Terraform and OpenTofu 1.12 and
// later can.
func (c cli) identityUnsupported() string {
	switch {
	case c.err != nil:
		return c.err.Error()
	case !c.atLeast(1, 12):
		return c.String() + " has no resource identity: importing by identity and identities in state need Terraform or OpenTofu 1.12 or later"
	}
	return ""
}

// queryUnsupported says why c has no `terraform query` (list resources),
// or "" when it has: Terraform 1.14 and later; OpenTofu has none.
func (c cli) queryUnsupported() string {
	switch {
	case c.err != nil:
		return c.err.Error()
	case c.Name != "Terraform":
		return c.String() + " has no terraform query: list resources need Terraform 1.14 or later"
	case !c.atLeast(1, 14):
		return c.String() + " has no terraform query: list resources need Terraform 1.14 or later"
	}
	return ""
}

// cliSteps returns steps when the CLI under test can run them. When it
// cannot (why returns the reason), it returns none, and a subtest named
// what, skipped with the reason, shows what was left out.
func cliSteps(t *testing.T, what string, why func(cli) string, steps ...resource.TestStep) []resource.TestStep {
	t.Helper()
	if reason := why(cliUnderTest()); reason != "" {
		t.Run(what, func(t *testing.T) { t.Skip(reason) })
		return nil
	}
	return steps
}

// identitySteps are cliSteps for steps that import by identity or check
// identities.
func identitySteps(t *testing.T, steps ...resource.TestStep) []resource.TestStep {
	t.Helper()
	return cliSteps(t, "identity", cli.identityUnsupported, steps...)
}
