package provider

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
)

var fileCallRE = regexp.MustCompile(`file\("([^"$]+)"\)`)

// devOverride builds the provider from this tree into a directory and
// writes a CLI configuration that uses it through a development override;
// it returns both. Configurations without a required_providers block name
// the provider hashicorp/depctrl implicitly; both addresses use the build.
func devOverride(t *testing.T) (bin, rc string) {
	t.Helper()
	root, err := env.RepoRoot()
	check.Must(t, err)
	bin = t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "./cmd/terraform-provider-depctrl")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the provider: %v\n%s", err, out)
	}
	rc = filepath.Join(bin, "dev.tfrc")
	check.Must(t, os.WriteFile(rc, []byte(fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"depctrl/depctrl\" = %q\n    \"hashicorp/depctrl\" = %q\n  }\n  direct {}\n}\n", bin, bin)), 0o600))
	return bin, rc
}

// TestAccExamples_validate runs `terraform validate` on every example
// directory with the provider built from this tree, so the examples in the
// docs use attributes that exist, with values the provider accepts at
// validation. An example import block with an identity
// (import-by-identity.tf) is validated on its own with the other files of
// its directory, by CLIs that read such blocks. examples/quickstart is also
// applied end to end by `make quickstart-test`, and the resources by the
// acceptance tests.
func TestAccExamples_validate(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("runs terraform; only with TF_ACC=1")
	}
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if tf == "" {
		var err error
		if tf, err = exec.LookPath("terraform"); err != nil {
			t.Fatal("terraform is not on PATH and TF_ACC_TERRAFORM_PATH is unset: run make tools")
		}
	}
	root, err := env.RepoRoot()
	check.Must(t, err)
	bin, rc := devOverride(t)

	var dirs, queryDirs []string
	check.Must(t, filepath.WalkDir(filepath.Join(root, "examples"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		dir := filepath.Dir(p)
		switch {
		case strings.HasSuffix(p, ".tfquery.hcl"):
			if !slices.Contains(queryDirs, dir) {
				queryDirs = append(queryDirs, dir)
			}
		case strings.HasSuffix(p, ".tf"):
			if !slices.Contains(dirs, dir) {
				dirs = append(dirs, dir)
			}
		}
		return nil
	}))
	if len(dirs) < 10 {
		t.Fatalf("found only %d example directories", len(dirs))
	}
	// validate runs terraform validate (with args) on files together.
	validate := func(t *testing.T, rel string, files []string, args ...string) {
		t.Helper()
		work := t.TempDir()
		for _, f := range files {
			data, err := os.ReadFile(f)
			check.Must(t, err)
			check.Must(t, os.WriteFile(filepath.Join(work, filepath.Base(f)), data, 0o600))
			// Files that examples read with file() stand for the
			// user's secrets; validate needs them to exist.
			for _, m := range fileCallRE.FindAllStringSubmatch(string(data), -1) {
				check.Must(t, os.MkdirAll(filepath.Join(work, filepath.Dir(m[1])), 0o700))
				check.Must(t, os.WriteFile(filepath.Join(work, m[1]), nil, 0o600))
			}
		}
		cmd := exec.Command(tf, append([]string{"validate", "-no-color"}, args...)...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "CHECKPOINT_DISABLE=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("terraform validate %s: %v\n%s", rel, err, out)
		}
	}
	// A list resource's example (list-resource.tfquery.hcl) is validated
	// with a provider block, by CLIs that have terraform query.
	providers := filepath.Join(bin, "providers.tf")
	check.Must(t, os.WriteFile(providers, []byte("terraform {\n  required_providers {\n    depctrl = { source = \"depctrl/depctrl\" }\n  }\n}\n\nprovider \"depctrl\" {}\n"), 0o600))
	if len(queryDirs) < 3 {
		t.Fatalf("found only %d list resource example directories", len(queryDirs))
	}
	for _, dir := range queryDirs {
		rel, _ := filepath.Rel(root, dir)
		files, err := filepath.Glob(filepath.Join(dir, "*.tfquery.hcl"))
		check.Must(t, err)
		t.Run(rel, func(t *testing.T) {
			if reason := cliUnderTest().queryUnsupported(); reason != "" {
				t.Skip(reason)
			}
			validate(t, rel, append(files, providers), "-query")
		})
	}
	for _, dir := range dirs {
		rel, _ := filepath.Rel(root, dir)
		files, err := filepath.Glob(filepath.Join(dir, "*.tf"))
		check.Must(t, err)
		// The import block with an identity imports to the same address
		// as the one with an ID: each is validated with the rest on its
		// own.
		byIdentity := filepath.Join(dir, "import-by-identity.tf")
		files = slices.DeleteFunc(files, func(f string) bool { return f == byIdentity })
		t.Run(rel, func(t *testing.T) { validate(t, rel, files) })
		if _, err := os.Stat(byIdentity); err == nil {
			files = slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == "import-by-string-id.tf" })
			t.Run(rel+"/import-by-identity", func(t *testing.T) {
				if reason := cliUnderTest().identityUnsupported(); reason != "" {
					t.Skip(reason)
				}
				validate(t, rel, append(files, byIdentity))
			})
		}
	}
}
