package release

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
)

func TestCheckVersion(t *testing.T) {
	for v, ok := range map[string]bool{
		"1.2.3": true, "0.0.0-dev-4bbc5b7": true, "1.2.3-rc.1": true, "1.2.3+build.5": true, "0.0.0-dev-0123456-dirty": true,
		"v1.2.3": false, "1.2": false, "4bbc5b7": false, "dev": false, "01.2.3": false, "": false,
	} {
		if err := CheckVersion(v); (err == nil) != ok {
			t.Errorf("CheckVersion(%q) = %v, want ok=%v", v, err, ok)
		}
	}
}

func TestVersionFrom(t *testing.T) {
	for describe, want := range map[string]string{
		"v1.2.3\n":                "1.2.3",
		"v1.2.3-4-g7fab0fb-dirty": "1.2.3-4-g7fab0fb-dirty",
		"c39b750":                 "0.0.0-dev-c39b750",
		"c39b750-dirty":           "0.0.0-dev-c39b750-dirty",
		"0123456":                 "0.0.0-dev-0123456",
		"release/x":               "0.0.0-dev-release-x",
	} {
		got := VersionFrom(describe)
		if got != want {
			t.Errorf("VersionFrom(%q) = %q, want %q", describe, got, want)
		}
		if err := CheckVersion(got); err != nil {
			t.Error(err)
		}
	}
}

func TestParsePlatforms(t *testing.T) {
	if got, err := ParsePlatforms("all"); err != nil || len(got) != 6 {
		t.Errorf("all = %v, %v; want the six platforms", got, err)
	}
	if got, err := ParsePlatforms("linux_arm64, windows_amd64"); err != nil || len(got) != 2 || got[1] != (Platform{"windows", "amd64"}) {
		t.Errorf("two = %v, %v", got, err)
	}
	for _, bad := range []string{"linux", "plan9_amd64", "linux-amd64", ""} {
		if _, err := ParsePlatforms(bad); err == nil {
			t.Errorf("ParsePlatforms(%q) succeeded", bad)
		}
	}
}

// TestPackLayout: the archives, the manifest and SHA256SUMS are named and
// filled as the registry and `terraform providers mirror` want; the mirror
// holds the archives under the provider's address.
func TestPackLayout(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "dist")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	const v = "1.2.3"
	var pkgs []Package
	for _, p := range []Platform{{"linux", "amd64"}, {"windows", "arm64"}} {
		pkg, err := Pack(v, p, bin, out)
		if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, pkg)
	}
	if _, err := Pack("v1.2.3", Platform{"linux", "amd64"}, bin, out); err == nil {
		t.Error("packed a version with a leading v")
	}
	for i, want := range []string{"terraform-provider-depctrl_v1.2.3", "terraform-provider-depctrl_v1.2.3.exe"} {
		if got := filepath.Base(pkgs[i].Zip); got != ZipName(v, pkgs[i].Platform) {
			t.Errorf("archive %s, want %s", got, ZipName(v, pkgs[i].Platform))
		}
		zr, err := zip.OpenReader(pkgs[i].Zip)
		if err != nil {
			t.Fatal(err)
		}
		if len(zr.File) != 1 || zr.File[0].Name != want || zr.File[0].Mode().Perm()&0o100 == 0 {
			t.Errorf("%s holds %v, want the executable %s alone", pkgs[i].Zip, zr.File, want)
		}
		_ = zr.Close()
		if h1, _ := dirhash.HashZip(pkgs[i].Zip, dirhash.Hash1); h1 != pkgs[i].H1 || !strings.HasPrefix(h1, "h1:") {
			t.Errorf("H1 %q, want %q", pkgs[i].H1, h1)
		}
	}

	if err := Finish(v, out, pkgs); err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile(filepath.Join(out, "terraform-provider-depctrl_1.2.3_manifest.json"))
	if err != nil || !strings.Contains(string(manifest), `"protocol_versions": ["6.0"]`) {
		t.Errorf("manifest %q, %v", manifest, err)
	}
	sums, err := os.ReadFile(filepath.Join(out, "terraform-provider-depctrl_1.2.3_SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, name := range []string{"terraform-provider-depctrl_1.2.3_linux_amd64.zip", "terraform-provider-depctrl_1.2.3_manifest.json", "terraform-provider-depctrl_1.2.3_windows_arm64.zip"} {
		data, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		want = append(want, hex.EncodeToString(sum[:])+"  "+name)
	}
	if got := string(sums); got != strings.Join(want, "\n")+"\n" {
		t.Errorf("SHA256SUMS:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}

	mirror := filepath.Join(dir, "mirror")
	if err := Mirror(mirror, pkgs); err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"registry.terraform.io", "registry.opentofu.org"} {
		if _, err := os.Stat(filepath.Join(mirror, host, "depctrl", "depctrl", "terraform-provider-depctrl_1.2.3_linux_amd64.zip")); err != nil {
			t.Errorf("mirror layout: %v", err)
		}
	}
}

// TestSign: SHA256SUMS signed with a key from gpg's keyring verifies with
// that key, as the registry checks it.
func TestSign(t *testing.T) {
	if _, err := exec.LookPath("gpg"); err != nil {
		t.Skip("no gpg on PATH: signing needs it")
	}
	home := t.TempDir()
	t.Setenv("GNUPGHOME", home)
	// The agent gpg starts for the keyring goes with it.
	t.Cleanup(func() { _ = exec.Command("gpgconf", "--kill", "gpg-agent").Run() })
	gen := exec.Command("gpg", "--batch", "--passphrase", "", "--quick-gen-key", "depctrl-test <test@example.com>", "ed25519", "sign", "1d")
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("generating a test key: %v\n%s", err, out)
	}
	out := t.TempDir()
	const v = "1.2.3"
	sums := filepath.Join(out, "terraform-provider-depctrl_1.2.3_SHA256SUMS")
	check.Must(t, os.WriteFile(sums, []byte("0000  terraform-provider-depctrl_1.2.3_linux_amd64.zip\n"), 0o644))
	check.Must(t, Sign(context.Background(), v, out, "test@example.com"))
	verify := exec.Command("gpg", "--batch", "--verify", sums+".sig", sums)
	if out, err := verify.CombinedOutput(); err != nil {
		t.Fatalf("the signature does not verify: %v\n%s", err, out)
	}
	if err := Sign(context.Background(), v, out, "nobody@example.com"); err == nil {
		t.Error("signed with a key the keyring does not hold")
	}
}

// TestAccInstallFromMirror: Terraform (or OpenTofu, whichever
// TF_ACC_TERRAFORM_PATH names) installs the package for this platform from
// the filesystem mirror with init, as a user behind an air gap would, and
// records the package's hash in .terraform.lock.hcl; the provider then
// answers (validate).
func TestAccInstallFromMirror(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("set TF_ACC=1: builds the provider and runs terraform init")
	}
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if tf == "" {
		var err error
		if tf, err = exec.LookPath("terraform"); err != nil {
			t.Skip("no terraform on PATH")
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const v = "0.0.0-test-mirror"
	p := Platform{runtime.GOOS, runtime.GOARCH}
	bin, err := Build(context.Background(), root, v, p, filepath.Join(dir, "build"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "dist")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	pkg, err := Pack(v, p, bin, out)
	if err != nil {
		t.Fatal(err)
	}
	mirror := filepath.Join(dir, "mirror")
	if err := Mirror(mirror, []Package{pkg}); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "cfg")
	if err := os.MkdirAll(cfg, 0o755); err != nil {
		t.Fatal(err)
	}
	rc := filepath.Join(dir, "terraform.rc")
	check.Must(t, os.WriteFile(rc, []byte(CLIConfig(mirror)), 0o644))
	check.Must(t, os.WriteFile(filepath.Join(cfg, "main.tf"), []byte(fmt.Sprintf(`terraform {
  required_providers {
    depctrl = { source = "depctrl/depctrl", version = %q }
  }
}
`, v)), 0o644))
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(tf, args...)
		cmd.Dir = cfg
		cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("terraform %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("init", "-input=false", "-no-color")
	lock, err := os.ReadFile(filepath.Join(cfg, ".terraform.lock.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(lock), `"`+pkg.H1+`"`) || !strings.Contains(string(lock), `version     = "`+v+`"`) {
		t.Errorf(".terraform.lock.hcl does not record version %s with %s:\n%s", v, pkg.H1, lock)
	}
	run("validate", "-no-color")
}
