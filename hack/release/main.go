// Command release builds the provider package: for every platform (or those
// given) the archive the Terraform Registry and `terraform providers
// mirror` use, the manifest and SHA256SUMS, into -out; with -mirror, also a
// filesystem mirror to install from with `terraform init`. Beside it, in
// -out/kubectl-depctrl, the kubectl plugin: an archive per platform and
// SHA256SUMS.
//
//	go run ./hack/release [-version 1.2.3] [-platforms all|linux_amd64,…] [-out dist] [-mirror dist/mirror] [-sign KEY]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/depctrl/terraform-provider-depctrl/internal/release"
)

func main() {
	v := flag.String("version", "", "the version to release, semantic and without a leading v; default: from git describe (a tag v1.2.3 gives 1.2.3, an untagged commit 0.0.0-dev-<commit>)")
	platforms := flag.String("platforms", "all", "comma-separated GOOS_GOARCH targets, or all")
	out := flag.String("out", "dist", "directory for the archives, the manifest and SHA256SUMS")
	mirror := flag.String("mirror", "", "also lay the archives out as a filesystem mirror in this directory")
	sign := flag.String("sign", "", "sign SHA256SUMS with this gpg key (fingerprint or user ID), as the Terraform Registry requires; a mirror needs no signature")
	flag.Parse()
	if err := run(context.Background(), *v, *platforms, *out, *mirror, *sign); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, v, platforms, out, mirror, sign string) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	if v == "" {
		v = release.GitVersion(root)
	}
	if err := release.CheckVersion(v); err != nil {
		return err
	}
	targets, err := release.ParsePlatforms(platforms)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	build, err := os.MkdirTemp("", "depctrl-release-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(build) }()
	var pkgs []release.Package
	var plugins []string
	for _, p := range targets {
		bin, err := release.Build(ctx, root, v, p, build)
		if err != nil {
			return err
		}
		pkg, err := release.Pack(v, p, bin, out)
		if err != nil {
			return err
		}
		fmt.Printf("%s %s  %s\n", v, pkg.H1, filepath.Base(pkg.Zip))
		pkgs = append(pkgs, pkg)
		plugin, err := release.BuildPlugin(ctx, root, v, p, build)
		if err != nil {
			return err
		}
		archive, err := release.PackPlugin(v, p, plugin, out)
		if err != nil {
			return err
		}
		fmt.Printf("%s %s\n", v, filepath.Join(release.PluginDir, filepath.Base(archive)))
		plugins = append(plugins, archive)
	}
	if err := release.Finish(v, out, pkgs); err != nil {
		return err
	}
	if err := release.FinishPlugin(v, out, plugins); err != nil {
		return err
	}
	if sign != "" {
		if err := release.Sign(ctx, v, out, sign); err != nil {
			return err
		}
	}
	if mirror != "" {
		if err := release.Mirror(mirror, pkgs); err != nil {
			return err
		}
		fmt.Printf("filesystem mirror: %s\n", mirror)
	}
	return nil
}
