package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/depctrl/terraform-provider-depctrl/internal/release"
)

// providerPackage is the provider packaged for this machine (as make
// release packs it) in a filesystem mirror, which terraform init installs
// from as it would behind an air gap.
type providerPackage struct {
	version string
	pkg     release.Package
	// cliConfig is the Terraform CLI configuration that reads the mirror.
	cliConfig string
}

// buildPackage builds and packs the provider for this platform into
// <dir>/dist and lays it out as a filesystem mirror in <dir>/mirror.
func buildPackage(ctx context.Context, root, dir string) (*providerPackage, error) {
	v := release.GitVersion(root)
	p := release.Platform{OS: runtime.GOOS, Arch: runtime.GOARCH}
	dist, mirror := filepath.Join(dir, "dist"), filepath.Join(dir, "mirror")
	if err := os.MkdirAll(dist, 0o755); err != nil {
		return nil, err
	}
	bin, err := release.Build(ctx, root, v, p, filepath.Join(dir, "build"))
	if err != nil {
		return nil, err
	}
	pkg, err := release.Pack(v, p, bin, dist)
	if err != nil {
		return nil, err
	}
	if err := release.Finish(v, dist, []release.Package{pkg}); err != nil {
		return nil, err
	}
	if err := release.Mirror(mirror, []release.Package{pkg}); err != nil {
		return nil, err
	}
	rc := filepath.Join(dir, "terraform.rc")
	if err := os.WriteFile(rc, []byte(release.CLIConfig(mirror)), 0o644); err != nil {
		return nil, err
	}
	return &providerPackage{version: v, pkg: pkg, cliConfig: rc}, nil
}

// pinVersion writes an override file into tfDir that requires exactly the
// packaged version: a development package (0.0.0-dev-…) is a prerelease,
// which Terraform installs only when a configuration names it.
func (p *providerPackage) pinVersion(tfDir string) error {
	return os.WriteFile(filepath.Join(tfDir, "depctrl_override.tf"), []byte(fmt.Sprintf(`# Written by the quickstart: the version it packaged into its mirror.
terraform {
  required_providers {
    depctrl = { source = "depctrl/depctrl", version = %q }
  }
}
`, p.version)), 0o644)
}

// init runs terraform init in tfDir and checks that the lock file records
// the package's hash.
func (p *providerPackage) init(ctx context.Context, tfDir string, env []string) error {
	cmd := exec.CommandContext(ctx, "terraform", "init", "-input=false", "-no-color")
	cmd.Dir, cmd.Env = tfDir, env
	cmd.Stdout, cmd.Stderr = indent(os.Stdout), indent(os.Stderr)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("terraform init in %s: %w", tfDir, err)
	}
	lock, err := os.ReadFile(filepath.Join(tfDir, ".terraform.lock.hcl"))
	if err != nil {
		return err
	}
	if !strings.Contains(string(lock), `"`+p.pkg.H1+`"`) {
		return fmt.Errorf("%s does not record the package's hash %s", filepath.Join(tfDir, ".terraform.lock.hcl"), p.pkg.H1)
	}
	return nil
}
