package release

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackPluginLayout: the kubectl plugin's archive per platform holds
// the executable alone, called kubectl-depctrl (.exe on Windows), in the
// release's kubectl-depctrl directory, apart from the provider's files,
// with SHA256SUMS over the archives.
func TestPackPluginLayout(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	content := "#!/bin/sh\necho why\n"
	if err := os.WriteFile(bin, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "dist")
	const v = "1.2.3"
	var archives []string
	for _, tc := range []struct {
		p    Platform
		want string
	}{{Platform{"linux", "amd64"}, "kubectl-depctrl"}, {Platform{"windows", "arm64"}, "kubectl-depctrl.exe"}} {
		path, err := PackPlugin(v, tc.p, bin, out)
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(out, "kubectl-depctrl", "kubectl-depctrl_1.2.3_"+tc.p.String()+".tar.gz"); path != want {
			t.Errorf("archive %s, want %s", path, want)
		}
		archives = append(archives, path)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		gz, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(gz)
		hdr, err := tr.Next()
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		if hdr.Name != tc.want || hdr.Mode&0o100 == 0 || string(data) != content {
			t.Errorf("%s holds %s (mode %o, %q), want the executable %s", path, hdr.Name, hdr.Mode, data, tc.want)
		}
		if _, err := tr.Next(); err != io.EOF {
			t.Errorf("%s holds more than the executable", path)
		}
		_ = f.Close()
	}
	if _, err := PackPlugin("v1.2.3", Platform{"linux", "amd64"}, bin, out); err == nil {
		t.Error("packed a version with a leading v")
	}
	if err := FinishPlugin(v, out, archives); err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile(filepath.Join(out, "kubectl-depctrl", "kubectl-depctrl_1.2.3_SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, a := range archives {
		data, err := os.ReadFile(a)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		want = append(want, hex.EncodeToString(sum[:])+"  "+filepath.Base(a))
	}
	if got := string(sums); got != strings.Join(want, "\n")+"\n" {
		t.Errorf("SHA256SUMS:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if _, err := os.Stat(filepath.Join(out, "terraform-provider-depctrl_1.2.3_SHA256SUMS")); !os.IsNotExist(err) {
		t.Errorf("the plugin wrote into the provider's SHA256SUMS: %v", err)
	}
}
