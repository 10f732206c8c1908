// Package release packs the provider the way the Terraform Registry and
// `terraform providers mirror` lay it out: one zip per platform holding
// terraform-provider-depctrl_v<version>, a manifest naming the plugin
// protocol, and SHA256SUMS over both; and, for installing without a
// registry, the same zips in a filesystem mirror's packed layout. Beside
// it, the kubectl plugin (plugin.go).
package release

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/mod/sumdb/dirhash"
)

// Name is the provider's binary and archive name; Address is its source
// address, under which Terraform looks for it in a mirror, and
// OpenTofuAddress the one OpenTofu gives `source = "depctrl/depctrl"`.
const (
	Name            = "terraform-provider-depctrl"
	Address         = "registry.terraform.io/depctrl/depctrl"
	OpenTofuAddress = "registry.opentofu.org/depctrl/depctrl"
)

// Platform is one target of a release.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "_" + p.Arch }

// All is every platform a release builds.
var All = []Platform{
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"linux", "amd64"}, {"linux", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// ParsePlatforms reads a comma-separated list such as linux_amd64,darwin_arm64;
// "all" is All.
func ParsePlatforms(s string) ([]Platform, error) {
	if s == "all" {
		return All, nil
	}
	var out []Platform
	for _, f := range strings.Split(s, ",") {
		os, arch, ok := strings.Cut(strings.TrimSpace(f), "_")
		p := Platform{os, arch}
		if !ok || !slices.Contains(All, p) {
			return nil, fmt.Errorf("platform %q: want one of %v, or all", f, All)
		}
		out = append(out, p)
	}
	return out, nil
}

// version is a semantic version without a leading v, as Terraform wants
// provider versions.
var version = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

// CheckVersion says why v cannot version a provider package, if it cannot.
func CheckVersion(v string) error {
	if !version.MatchString(v) {
		return fmt.Errorf("version %q: a provider package needs a semantic version without a leading v, such as 1.2.3 or 0.0.0-dev-4bbc5b7", v)
	}
	return nil
}

// Package is one platform's archive.
type Package struct {
	Platform Platform
	// Zip is the archive's path; H1 the hash Terraform records for it in
	// .terraform.lock.hcl ("h1:…").
	Zip string
	H1  string
}

// Build compiles the provider (./cmd/terraform-provider-depctrl in the
// module at root) for p into dir, statically and without local paths, and
// returns the binary's path.
func Build(ctx context.Context, root, v string, p Platform, dir string) (string, error) {
	return build(ctx, root, v, p, Name, filepath.Join(dir, p.String(), binaryName(v, p)))
}

// build compiles ./cmd/<command> for p into bin.
func build(ctx context.Context, root, v string, p Platform, command, bin string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+v, "-o", bin, "./cmd/"+command)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building %s for %s: %w", command, p, err)
	}
	return bin, nil
}

// binaryName is the executable's name inside the archive.
func binaryName(v string, p Platform) string {
	name := Name + "_v" + v
	if p.OS == "windows" {
		name += ".exe"
	}
	return name
}

// ZipName is the archive's file name.
func ZipName(v string, p Platform) string { return fmt.Sprintf("%s_%s_%s.zip", Name, v, p) }

// Pack writes the archive of bin for p into out.
func Pack(v string, p Platform, bin, out string) (Package, error) {
	if err := CheckVersion(v); err != nil {
		return Package{}, err
	}
	path := filepath.Join(out, ZipName(v, p))
	if err := writeZip(path, bin, binaryName(v, p)); err != nil {
		return Package{}, fmt.Errorf("packing %s: %w", path, err)
	}
	h1, err := dirhash.HashZip(path, dirhash.Hash1)
	if err != nil {
		return Package{}, fmt.Errorf("hashing %s: %w", path, err)
	}
	return Package{Platform: p, Zip: path, H1: h1}, nil
}

func writeZip(path, bin, name string) error {
	src, err := os.Open(bin)
	if err != nil {
		return err
	}
	defer func() { _ = src.Close() }()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	hdr := &zip.FileHeader{Name: name, Method: zip.Deflate}
	hdr.SetMode(0o755)
	w, err := zw.CreateHeader(hdr)
	if err == nil {
		_, err = io.Copy(w, src)
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Manifest is the registry manifest of a provider speaking protocol 6.
const Manifest = `{
  "version": 1,
  "metadata": {
    "protocol_versions": ["6.0"]
  }
}
`

// Finish writes the manifest and SHA256SUMS (over the archives and the
// manifest, as the registry wants them) into out, next to pkgs.
func Finish(v, out string, pkgs []Package) error {
	manifest := filepath.Join(out, fmt.Sprintf("%s_%s_manifest.json", Name, v))
	if err := os.WriteFile(manifest, []byte(Manifest), 0o644); err != nil {
		return err
	}
	files := []string{manifest}
	for _, p := range pkgs {
		files = append(files, p.Zip)
	}
	return writeSums(filepath.Join(out, fmt.Sprintf("%s_%s_SHA256SUMS", Name, v)), files)
}

// writeSums writes the SHA-256 of each of files, as sha256sum prints them,
// sorted by file name, into path.
func writeSums(path string, files []string) error {
	var sums []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		sums = append(sums, hex.EncodeToString(sum[:])+"  "+filepath.Base(f))
	}
	slices.SortFunc(sums, func(a, b string) int { return strings.Compare(a[66:], b[66:]) })
	return os.WriteFile(path, []byte(strings.Join(sums, "\n")+"\n"), 0o644)
}

// Mirror copies pkgs into dir in a filesystem mirror's packed layout
// (<dir>/registry.terraform.io/depctrl/depctrl/<zip>, and the same under
// registry.opentofu.org for OpenTofu), which
// `provider_installation { filesystem_mirror { path = dir } }` and
// `init -plugin-dir=dir` read.
func Mirror(dir string, pkgs []Package) error {
	for _, address := range []string{Address, OpenTofuAddress} {
		target := filepath.Join(dir, filepath.FromSlash(address))
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}
		for _, p := range pkgs {
			data, err := os.ReadFile(p.Zip)
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(target, filepath.Base(p.Zip)), data, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// CLIConfig is a CLI configuration (Terraform's or OpenTofu's) that
// installs this provider from the filesystem mirror at dir and every other
// provider as usual.
func CLIConfig(dir string) string {
	return fmt.Sprintf(`provider_installation {
  filesystem_mirror {
    path    = %q
    include = [%q, %q]
  }
  direct {
    exclude = [%q, %q]
  }
}
`, dir, Address, OpenTofuAddress, Address, OpenTofuAddress)
}

// VersionFrom derives a package version from `git describe --tags --always
// --dirty`: a release tag (v1.2.3, possibly with more commits and -dirty)
// gives its version, anything else 0.0.0-dev-<describe>, a prerelease that
// a configuration must name exactly to install.
func VersionFrom(describe string) string {
	v := strings.TrimPrefix(strings.TrimSpace(describe), "v")
	if CheckVersion(v) == nil {
		return v
	}
	return "0.0.0-dev-" + strings.Trim(notIdentifier.ReplaceAllString(strings.TrimSpace(describe), "-"), "-")
}

// notIdentifier matches what a prerelease identifier may not hold.
var notIdentifier = regexp.MustCompile(`[^0-9A-Za-z-]+`)

// GitVersion is VersionFrom the checkout at root.
func GitVersion(root string) string {
	cmd := exec.Command("git", "describe", "--tags", "--always", "--dirty")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "0.0.0-dev"
	}
	return VersionFrom(string(out))
}

// Sign writes the detached GPG signature of the release's SHA256SUMS
// (<name>_<version>_SHA256SUMS.sig), which the Terraform Registry requires,
// with the secret key key (a fingerprint or user ID) from gpg's keyring.
func Sign(ctx context.Context, v, out, key string) error {
	sums := filepath.Join(out, fmt.Sprintf("%s_%s_SHA256SUMS", Name, v))
	cmd := exec.CommandContext(ctx, "gpg", "--batch", "--yes", "--local-user", key, "--detach-sign", "--output", sums+".sig", sums)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("signing %s with gpg key %s: %w: %s", filepath.Base(sums), key, err, out)
	}
	return nil
}
