package release

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// PluginName is the kubectl plugin's binary and archive name: kubectl runs
// a kubectl-depctrl on the PATH as "kubectl depctrl".
const PluginName = "kubectl-depctrl"

// PluginDir is where in a release's output the plugin's archives and their
// SHA256SUMS go, apart from the provider's, which the registry reads.
const PluginDir = PluginName

// BuildPlugin compiles the kubectl plugin (./cmd/kubectl-depctrl) for p
// into dir, as Build does the provider, and returns the binary's path.
func BuildPlugin(ctx context.Context, root, v string, p Platform, dir string) (string, error) {
	return build(ctx, root, v, p, PluginName, filepath.Join(dir, "plugin", p.String(), pluginBinary(p)))
}

// pluginBinary is the executable's name inside the archive.
func pluginBinary(p Platform) string {
	if p.OS == "windows" {
		return PluginName + ".exe"
	}
	return PluginName
}

// PluginArchiveName is the plugin archive's file name: a gzipped tar, as
// krew and most kubectl plugins ship.
func PluginArchiveName(v string, p Platform) string {
	return fmt.Sprintf("%s_%s_%s.tar.gz", PluginName, v, p)
}

// PackPlugin writes the archive of bin for p into out/PluginDir and
// returns its path.
func PackPlugin(v string, p Platform, bin, out string) (string, error) {
	if err := CheckVersion(v); err != nil {
		return "", err
	}
	dir := filepath.Join(out, PluginDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, PluginArchiveName(v, p))
	if err := writeTarGz(path, bin, pluginBinary(p)); err != nil {
		return "", fmt.Errorf("packing %s: %w", path, err)
	}
	return path, nil
}

// FinishPlugin writes SHA256SUMS over the plugin's archives into
// out/PluginDir.
func FinishPlugin(v, out string, archives []string) error {
	return writeSums(filepath.Join(out, PluginDir, fmt.Sprintf("%s_%s_SHA256SUMS", PluginName, v)), archives)
}

// writeTarGz writes a gzipped tar at path holding bin as name, executable.
func writeTarGz(path, bin, name string) error {
	src, err := os.Open(bin)
	if err != nil {
		return err
	}
	defer func() { _ = src.Close() }()
	info, err := src.Stat()
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	err = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: info.Size(), Typeflag: tar.TypeReg, ModTime: info.ModTime()})
	if err == nil {
		_, err = io.Copy(tw, src)
	}
	for _, c := range []io.Closer{tw, gz, f} {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
